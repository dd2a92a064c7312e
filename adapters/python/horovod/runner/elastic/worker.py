"""A worker's side of an elastic job: its connection to the launcher's
rendezvous service, over which it learns its place in each new world
(rank, size, local and cross ranks, epoch) and whether the membership
changed since its world began. Used by hvd.init() when HOROVOD_ELASTIC=1,
and by the elastic State at each commit."""

import os
import socket
import struct
import threading
import time
from dataclasses import dataclass

from horovod.runner.protocol import (
    CLIENT, MAGIC, NONCE_BYTES, OP_ASSIGN, OP_UPDATES, OP_WORKER,
    RESPONSE_BIT, SERVER, STATUS_OK, STATUS_TIMEOUT, TAG_BYTES, Reader,
    frame_tag, pack_str)

# How long one ASSIGN request waits before it is asked again.
POLL_S = 5.0


class RendezvousUnavailable(RuntimeError):
    """The launcher's service refused or could not be reached."""


@dataclass(frozen=True)
class Assignment:
    epoch: int
    update_seq: int
    rank: int
    size: int
    local_rank: int
    local_size: int
    cross_rank: int
    cross_size: int

    def environment(self):
        return {"HOROVOD_WORLD_EPOCH": self.epoch, "HOROVOD_RANK": self.rank,
                "HOROVOD_SIZE": self.size,
                "HOROVOD_LOCAL_RANK": self.local_rank,
                "HOROVOD_LOCAL_SIZE": self.local_size,
                "HOROVOD_CROSS_RANK": self.cross_rank,
                "HOROVOD_CROSS_SIZE": self.cross_size}


class Connection:
    """One authenticated connection to the service (PROTOCOL.md)."""

    def __init__(self, address, port, secret, timeout=30.0):
        self.secret = secret
        self.sock = socket.create_connection((address, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        greeting = self._recv(len(MAGIC) + NONCE_BYTES)
        if greeting[:len(MAGIC)] != MAGIC:
            raise RendezvousUnavailable("not a horovodrun rendezvous service")
        self.nonce = greeting[len(MAGIC):]
        self.seq = 0

    def _recv(self, n):
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise RendezvousUnavailable("the rendezvous service closed "
                                            "the connection")
            data += chunk
        return data

    def call(self, op, fields, wait):
        """(status, Reader over the response fields)."""
        body = struct.pack(">QB", self.seq, op) + fields
        tag = frame_tag(self.secret, CLIENT, self.nonce, body)
        self.sock.settimeout(wait + 30.0)
        self.sock.sendall(struct.pack(">I", TAG_BYTES + len(body)) + tag +
                          body)
        n = struct.unpack(">I", self._recv(4))[0]
        frame = self._recv(n)
        tag, reply = frame[:TAG_BYTES], frame[TAG_BYTES:]
        if tag != frame_tag(self.secret, SERVER, self.nonce, reply):
            raise RendezvousUnavailable("a response failed authentication")
        seq, got_op, status = struct.unpack(">QBB", reply[:10])
        if seq != self.seq or got_op != op | RESPONSE_BIT:
            raise RendezvousUnavailable("a response out of order")
        self.seq += 1
        reader = Reader(reply[10:])
        if status not in (STATUS_OK, STATUS_TIMEOUT):
            raise RendezvousUnavailable(reader.str(1 << 16))
        return status, reader

    def close(self):
        self.sock.close()


class WorkerLink:
    """This process's link to the launcher, as the worker (host, slot)."""

    def __init__(self, env=os.environ):
        self.host = env["HOROVOD_HOSTNAME"]
        self.slot = int(env["HOROVOD_ELASTIC_SLOT"])
        self.connection = Connection(
            env["HOROVOD_RENDEZVOUS_ADDR"],
            int(env["HOROVOD_RENDEZVOUS_PORT"]),
            bytes.fromhex(env["HOROVOD_SECRET_KEY"]))
        fields = (pack_str(env["HOROVOD_JOB_ID"]) + pack_str(self.host) +
                  struct.pack(">I", self.slot))
        self.connection.call(OP_WORKER, fields, 0)
        self.lock = threading.Lock()
        self.current = None  # the Assignment of the world this worker is in

    def next_assignment(self, timeout):
        """Waits up to `timeout` seconds for a world newer than the current
        one that includes this worker; raises RendezvousUnavailable when the
        launcher says this worker has no place any more (or on timeout)."""
        after = self.current.epoch if self.current else 0
        deadline = time.monotonic() + timeout
        with self.lock:
            while True:
                wait = max(0.0, min(POLL_S, deadline - time.monotonic()))
                status, r = self.connection.call(
                    OP_ASSIGN, struct.pack(">QI", after, int(wait * 1000)),
                    wait)
                if status == STATUS_OK:
                    epoch, seq = r.u64(), r.u64()
                    self.current = Assignment(epoch, seq,
                                              *(r.u32() for _ in range(6)))
                    return self.current
                if time.monotonic() >= deadline:
                    raise RendezvousUnavailable(
                        f"no new world for worker {self.host} slot "
                        f"{self.slot} within {timeout:g} s")

    def membership_news(self):
        """(latest news number, ADDED/REMOVED bits since this worker's
        world began)."""
        since = self.current.update_seq if self.current else 0
        with self.lock:
            _, r = self.connection.call(OP_UPDATES, struct.pack(">Q", since),
                                        0)
            return r.u64(), r.u8()


_link = None


def elastic_worker():
    """Whether this process is a worker of an elastic job."""
    return os.environ.get("HOROVOD_ELASTIC") == "1"


def link():
    global _link
    if _link is None:
        _link = WorkerLink()
    return _link


def enter_next_world(timeout):
    """Sets this process's HOROVOD_RANK, HOROVOD_SIZE, ... and
    HOROVOD_WORLD_EPOCH to its place in the next world."""
    assignment = link().next_assignment(timeout)
    for name, value in assignment.environment().items():
        os.environ[name] = str(value)
    return assignment


def current_world():
    return link().current if _link is not None else None

