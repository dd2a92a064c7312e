"""Helpers for the horovodrun tests: running horovodrun, and a client of the
rendezvous protocol (tools/horovodrun/PROTOCOL.md) written from the
document, for rank programs and for attacks on the service."""

import hashlib
import hmac
import os
import socket
import struct
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
RANK = os.path.join(HERE, "ranks", "rank.py")
MAGIC = b"HVR1"
OP_JOIN, OP_PUT, OP_GET, OP_ALLGATHER = 1, 2, 3, 4
STATUS_OK, STATUS_TIMEOUT, STATUS_ERROR = 0, 1, 2


def horovodrun():
    path = os.environ.get("HOROVODRUN")
    if not path:
        sys.exit("set HOROVODRUN to the horovodrun under test")
    return path


def run(args, timeout=60, **kwargs):
    """Runs horovodrun to completion: (exit status, stdout, stderr, seconds)."""
    started = time.monotonic()
    p = subprocess.run([horovodrun()] + args, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=timeout, text=True,
                       **kwargs)
    return p.returncode, p.stdout, p.stderr, time.monotonic() - started


def rank_command(mode, *args):
    return [sys.executable, RANK, mode] + [str(a) for a in args]


class Running:
    """horovodrun in the background, its output collected as it comes."""

    def __init__(self, args):
        self.proc = subprocess.Popen([horovodrun()] + args,
                                     stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self.out, self.err = [], []
        self.lock = threading.Condition()
        self.threads = [threading.Thread(target=self._collect, args=(s, b))
                        for s, b in ((self.proc.stdout, self.out),
                                     (self.proc.stderr, self.err))]
        for t in self.threads:
            t.start()

    def _collect(self, stream, lines):
        for line in stream:
            with self.lock:
                lines.append(line)
                self.lock.notify_all()

    def wait_for_lines(self, predicate, count, timeout=30):
        deadline = time.monotonic() + timeout
        with self.lock:
            while sum(1 for x in self.out if predicate(x)) < count:
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    return False
                self.lock.wait(min(left, 0.2))
        return True

    def finish(self, timeout=30):
        status = self.proc.wait(timeout=timeout)
        for t in self.threads:
            t.join()
        self.proc.stdout.close()
        self.proc.stderr.close()
        return status, "".join(self.out), "".join(self.err)


def process_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead for our purposes.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


# ----------------------------------------------------------------------------
# Protocol


def pack_str(s):
    b = s.encode()
    return struct.pack(">H", len(b)) + b


def pack_blob(b):
    return struct.pack(">I", len(b)) + b


def tag(secret, direction, nonce, body):
    return hmac.new(secret, MAGIC + direction + nonce + body,
                    hashlib.sha256).digest()


def frame(secret, nonce, seq, op, fields, direction=b"C"):
    body = struct.pack(">QB", seq, op) + fields
    t = tag(secret, direction, nonce, body) if secret is not None \
        else bytes(32)
    return struct.pack(">I", 32 + len(body)) + t + body


def recv_exact(sock, n):
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise EOFError("connection closed")
        data += chunk
    return data


class Client:
    """One connection to the rendezvous service, as a rank."""

    def __init__(self, env=os.environ):
        self.secret = bytes.fromhex(env["HOROVOD_SECRET_KEY"])
        self.rank, self.size = int(env["HOROVOD_RANK"]), int(env["HOROVOD_SIZE"])
        self.sock = socket.create_connection(
            (env["HOROVOD_RENDEZVOUS_ADDR"],
             int(env["HOROVOD_RENDEZVOUS_PORT"])), timeout=30)
        greeting = recv_exact(self.sock, 20)
        assert greeting[:4] == MAGIC, greeting
        self.nonce = greeting[4:]
        self.seq = 0
        self.collective = 0
        status, _ = self.call(OP_JOIN, struct.pack(">II", self.rank, self.size)
                              + pack_str(env["HOROVOD_JOB_ID"])
                              + pack_str(env.get("HOROVOD_HOSTNAME", "")))
        assert status == STATUS_OK

    def call(self, op, fields, timeout=30):
        self.sock.settimeout(timeout + 10)
        self.sock.sendall(frame(self.secret, self.nonce, self.seq, op, fields))
        n = struct.unpack(">I", recv_exact(self.sock, 4))[0]
        data = recv_exact(self.sock, n)
        reply = data[32:]
        if not hmac.compare_digest(data[:32], tag(self.secret, b"S",
                                                  self.nonce, reply)):
            raise RuntimeError("response fails authentication")
        seq, rop, status = struct.unpack(">QBB", reply[:10])
        if seq != self.seq or rop != op | 0x80:
            raise RuntimeError("response out of order")
        self.seq += 1
        return status, reply[10:]

    def put(self, key, value):
        status, _ = self.call(OP_PUT, pack_str(key) + pack_blob(value))
        assert status == STATUS_OK

    def get(self, rank, key, timeout=20.0):
        """The value, or None on timeout."""
        status, fields = self.call(
            OP_GET, struct.pack(">I", rank) + pack_str(key) +
            struct.pack(">I", int(timeout * 1000)), timeout)
        if status == STATUS_TIMEOUT:
            return None
        assert status == STATUS_OK, fields
        n = struct.unpack(">I", fields[:4])[0]
        return fields[4:4 + n]

    def allgather(self, value, timeout=20.0):
        key = f"test.collective.{self.collective}"
        self.collective += 1
        status, fields = self.call(
            OP_ALLGATHER, pack_str(key) + pack_blob(value) +
            struct.pack(">I", int(timeout * 1000)), timeout)
        assert status == STATUS_OK, (status, fields)
        count, pos, out = struct.unpack(">I", fields[:4])[0], 4, []
        for _ in range(count):
            n = struct.unpack(">I", fields[pos:pos + 4])[0]
            out.append(fields[pos + 4:pos + 4 + n])
            pos += 4 + n
        return out

    def barrier(self):
        self.allgather(b"")
