"""Where the rendezvous service listens: loopback for a job on this machine
alone, else an address the remote hosts reach this one at."""

import fcntl
import socket
import struct

from horovod.runner.hosts import is_local
from horovod.runner.log import Fatal


def interface_address(name):
    """The IPv4 address of network interface `name` (Linux SIOCGIFADDR)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        request = struct.pack("256s", name.encode()[:15])
        reply = fcntl.ioctl(sock.fileno(), 0x8915, request)  # SIOCGIFADDR
        return socket.inet_ntoa(reply[20:24])
    except OSError:
        return None
    finally:
        sock.close()


def rendezvous_address(hosts, interfaces):
    """The first of `interfaces` with an address, else the address this
    host routes to the first remote host through."""
    if all(is_local(h) for h in hosts):
        return "127.0.0.1"
    for name in interfaces:
        address = interface_address(name)
        if address:
            return address
    if interfaces:
        raise Fatal(f"--network-interfaces: none of {','.join(interfaces)} "
                    f"has an IPv4 address")
    remote = next(h for h in hosts if not is_local(h))
    try:
        probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        probe.connect((remote, 9))  # no packet is sent: only routes
        address = probe.getsockname()[0]
        probe.close()
        return address
    except OSError as e:
        raise Fatal(f"cannot find this host's address towards {remote} "
                    f"({e}); name the interface with "
                    f"--network-interfaces") from None
