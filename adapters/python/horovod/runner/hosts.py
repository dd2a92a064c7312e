"""The hosts a job may use, as (name, slots) pairs: from -H, from a host
file, or this machine alone; and whether a host name means this machine."""

import socket

from horovod.runner.log import Fatal


def split_host_slots(item, default_slots):
    """'host:slots' or 'host' -> (host, slots); ValueError when the count is
    not a number."""
    if ":" not in item:
        return item, default_slots
    host, _, count = item.rpartition(":")
    return host, int(count)


def parse_hosts(text):
    """'a:4,b:2' (a missing slot count means 1)."""
    hosts = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        try:
            name, count = split_host_slots(item, 1)
        except ValueError:
            raise Fatal(f"-H: bad slot count in '{item}' (expected "
                        f"host:slots)") from None
        if not name or count < 1:
            raise Fatal(f"-H: bad host entry '{item}' (expected host:slots)")
        hosts.append((name, count))
    return hosts


def parse_hostfile(path):
    """One host a line, 'host slots=N' or 'host:N'; '#' starts a comment."""
    hosts = []
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise Fatal(f"--hostfile {path}: {e.strerror}") from None
    for number, line in enumerate(lines, 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        fields = line.split()
        name, slots = fields[0], 1
        if ":" in name:
            name, _, text = name.rpartition(":")
            slots = text
        for field in fields[1:]:
            if field.startswith("slots="):
                slots = field[len("slots="):]
        try:
            slots = int(slots)
        except ValueError:
            raise Fatal(f"{path}:{number}: bad slot count "
                        f"'{slots}'") from None
        if slots < 1:
            raise Fatal(f"{path}:{number}: slot count must be positive")
        hosts.append((name, slots))
    return hosts


def hosts_from_args(args):
    """The hosts the command line names; -np slots here without any."""
    if args.hosts and args.hostfile:
        raise Fatal("give either -H or --hostfile, not both")
    if args.hosts:
        return parse_hosts(args.hosts)
    if args.hostfile:
        return parse_hostfile(args.hostfile)
    if args.np is None:
        raise Fatal("-np is required without -H or --hostfile")
    return [("localhost", args.np)]


def is_local(host):
    names = {"localhost", "127.0.0.1", "::1", socket.gethostname(),
             socket.gethostname().split(".")[0], socket.getfqdn()}
    return host in names
