"""A rank for the horovodrun tests: `rank.py MODE [ARGS]`, started by
horovodrun (which sets HOROVOD_*)."""

import glob
import os
import signal
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
import launcher_testlib as lib  # noqa: E402

ENV = os.environ
RANK = int(ENV["HOROVOD_RANK"])
SIZE = int(ENV["HOROVOD_SIZE"])


def say(text, stream=sys.stdout):
    stream.write(text + "\n")
    stream.flush()


def write_pid(folder):
    with open(os.path.join(folder, f"pid.{RANK}"), "w") as f:
        f.write(str(os.getpid()))


def hello():
    keys = ["HOROVOD_RANK", "HOROVOD_SIZE", "HOROVOD_LOCAL_RANK",
            "HOROVOD_LOCAL_SIZE", "HOROVOD_CROSS_RANK", "HOROVOD_CROSS_SIZE",
            "HOROVOD_HOSTNAME", "HOROVOD_CONFIG",
            "HOROVOD_NETWORK_INTERFACES", "HOROVOD_RENDEZVOUS_ADDR",
            "HOROVOD_START_TIMEOUT"]
    say("env " + " ".join(f"{k}={ENV.get(k, '')}" for k in keys))
    say(f"hello from rank {RANK} of {SIZE}")
    say(f"err line {RANK}", sys.stderr)
    sys.stdout.write(f"no newline {RANK}")  # horovodrun ends the line
    sys.stdout.flush()


def secret_in_a_command_line():
    secret = ENV["HOROVOD_SECRET_KEY"].encode()
    for path in glob.glob("/proc/[0-9]*/cmdline"):
        try:
            with open(path, "rb") as f:
                if secret in f.read():
                    return True
        except OSError:
            pass
    return False


def whereami():
    lib.Client().barrier()  # every rank has started
    say(f"secret in a command line: {secret_in_a_command_line()}")
    say(f"netns {os.readlink('/proc/self/ns/net')} "
        f"host={ENV['HOROVOD_HOSTNAME']} rank={RANK} "
        f"local={ENV['HOROVOD_LOCAL_RANK']}/{ENV['HOROVOD_LOCAL_SIZE']} "
        f"cross={ENV['HOROVOD_CROSS_RANK']}/{ENV['HOROVOD_CROSS_SIZE']}")
    lib.Client().barrier()


def fail(folder, victim, how):
    """Every rank joins and syncs; `victim` then fails (`how`: an exit
    status, or "kill9" after leaving shared memory behind); the others wait
    to be torn down."""
    victim = int(victim)
    write_pid(folder)
    client = lib.Client()
    if RANK == victim and how == "kill9":
        job = ENV["HOROVOD_JOB_ID"]
        open(f"/dev/shm/hvd-{job}-segment", "wb").close()
        os.makedirs(f"/tmp/hvd-{job}/sockets", exist_ok=True)
        say(f"job={job}")
    client.barrier()
    if RANK == victim:
        if how == "kill9":
            os.kill(os.getpid(), signal.SIGKILL)
        sys.exit(int(how))
    time.sleep(120)


def signals(folder, stubborn):
    """Reports the signal it gets; rank `stubborn` ignores SIGTERM."""
    write_pid(folder)

    def report(signum, frame):
        say(f"rank {RANK} got {signal.Signals(signum).name}")
        sys.exit(7)

    signal.signal(signal.SIGINT, report)
    if RANK == int(stubborn):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    else:
        signal.signal(signal.SIGTERM, report)
    lib.Client().barrier()
    say("ready")
    while True:
        time.sleep(1)


def slow_join(late_rank):
    if RANK == int(late_rank):
        time.sleep(120)
    lib.Client()
    time.sleep(120)


def attack():
    """Rank 0 sends the service what a stranger might; then every rank checks
    that the store holds only what the ranks put."""
    client = lib.Client()
    if RANK == 0:
        client.put("target", b"good")
        address = (ENV["HOROVOD_RENDEZVOUS_ADDR"],
                   int(ENV["HOROVOD_RENDEZVOUS_PORT"]))
        secret = bytes.fromhex(ENV["HOROVOD_SECRET_KEY"])
        job = ENV["HOROVOD_JOB_ID"]
        join = struct.pack(">II", 0, SIZE) + lib.pack_str(job) + \
            lib.pack_str("intruder")
        evil_put = lib.pack_str("target") + lib.pack_blob(b"evil")
        injected = lib.pack_str("injected") + lib.pack_blob(b"evil")

        def attempt(name, payload_for):
            """payload_for(nonce) -> bytes; waits until the service hangs
            up."""
            s = socket.create_connection(address, timeout=15)
            nonce = lib.recv_exact(s, 20)[4:]
            try:  # the service may hang up before all is sent
                s.sendall(payload_for(nonce))
                s.shutdown(socket.SHUT_WR)
                while s.recv(4096):
                    pass
            except OSError:
                pass
            s.close()
            say(f"attack done: {name}")

        attempt("random bytes", lambda n: os.urandom(4096))
        attempt("oversized length",
                lambda n: struct.pack(">I", 0xfffffff0) + os.urandom(64))
        attempt("undersized length", lambda n: struct.pack(">I", 3) + b"abc")
        attempt("truncated frame",
                lambda n: struct.pack(">I", 200) + os.urandom(20))
        attempt("wrong secret", lambda n: lib.frame(
            os.urandom(32), n, 0, lib.OP_JOIN, join) + lib.frame(
            os.urandom(32), n, 1, lib.OP_PUT, evil_put))
        attempt("unsigned", lambda n: lib.frame(
            None, n, 0, lib.OP_JOIN, join) + lib.frame(
            None, n, 1, lib.OP_PUT, injected))
        attempt("signed as the server", lambda n: lib.frame(
            secret, n, 0, lib.OP_JOIN, join, direction=b"S"))
        # Frames signed with the real secret, but recorded on another
        # connection (another nonce): a replay.
        recorded = lib.frame(secret, b"\0" * 16, 0, lib.OP_JOIN, join) + \
            lib.frame(secret, b"\0" * 16, 1, lib.OP_PUT, evil_put)
        attempt("replay from another connection", lambda n: recorded)
        # A replay within one connection: the JOIN's frame sent twice, then
        # a PUT that would be valid had the replay been accepted.
        attempt("replay within a connection", lambda n: lib.frame(
            secret, n, 0, lib.OP_JOIN, join) + lib.frame(
            secret, n, 0, lib.OP_JOIN, join) + lib.frame(
            secret, n, 1, lib.OP_PUT, evil_put))
        attempt("malformed request", lambda n: lib.frame(
            secret, n, 0, lib.OP_JOIN, join) + lib.frame(
            secret, n, 1, lib.OP_PUT, lib.pack_str("target") +
            struct.pack(">I", 1000) + b"short"))
        attempt("request before JOIN", lambda n: lib.frame(
            secret, n, 0, lib.OP_PUT, evil_put))
        attempt("unknown op", lambda n: lib.frame(
            secret, n, 0, lib.OP_JOIN, join) + lib.frame(
            secret, n, 1, 0x33, b""))
    client.barrier()
    target = client.get(0, "target")
    stray = client.get(0, "injected", timeout=0.2)
    say(f"target={target!r} injected={stray!r}")
    if target != b"good" or stray is not None:
        say("store changed", sys.stderr)
        sys.exit(1)
    client.barrier()
    say("store unchanged")


MODES = {"hello": hello, "whereami": whereami, "fail": fail,
         "signals": signals, "slow-join": slow_join, "attack": attack}

if __name__ == "__main__":
    MODES[sys.argv[1]](*sys.argv[2:])
