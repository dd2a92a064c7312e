"""Where an elastic job may run: the hosts a discovery script prints, or a
fixed set given by -H / --hostfile / -np that can only shrink."""

import subprocess

from horovod.runner.hosts import split_host_slots
from horovod.runner.log import Fatal

SCRIPT_TIMEOUT_S = 10.0


class DiscoveryFailed(Exception):
    """The discovery script failed this time; the last answer stands."""


def parse_host_slots(text, default_slots, source):
    """'host:slots' or 'host' lines -> {host: slots}, in order."""
    hosts = {}
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            host, slots = split_host_slots(line, default_slots)
        except ValueError:
            host, slots = "", -1
        if not host or slots < 0:
            raise DiscoveryFailed(f"{source}: bad line '{line}' (expected "
                                  f"host:slots)")
        hosts[host] = slots
    return hosts


class ScriptDiscovery:
    """Runs `script` (a shell command line) at each poll."""

    def __init__(self, script, default_slots):
        self.script, self.default_slots = script, default_slots

    def find(self):
        try:
            done = subprocess.run(self.script, shell=True,
                                  stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True,
                                  timeout=SCRIPT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise DiscoveryFailed(f"host discovery script '{self.script}' "
                                  f"ran over {SCRIPT_TIMEOUT_S:g} s") from None
        if done.returncode != 0:
            said = done.stderr.strip()[-200:]
            raise DiscoveryFailed(
                f"host discovery script '{self.script}' exited with status "
                f"{done.returncode}" + (f": {said}" if said else ""))
        return parse_host_slots(done.stdout, self.default_slots,
                                f"host discovery script '{self.script}'")


class FixedDiscovery:
    """The hosts of the command line; a host only leaves by blacklisting."""

    def __init__(self, hosts):
        self.hosts = dict(hosts)
        if not self.hosts:
            raise Fatal("no hosts to run on")

    def find(self):
        return dict(self.hosts)
