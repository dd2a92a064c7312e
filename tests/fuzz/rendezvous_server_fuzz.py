#!/usr/bin/env python3
"""Fuzzes the rendezvous service's frame handling (horovod.runner.rendezvous
Session: length check, HMAC, sequence, op, each request's fields) with
frames before and after authentication.

An input is a flags byte, then frames: u16 length, that many body bytes.
Flag bit 0 signs each frame with the job's secret (so the decoders behind
the HMAC are reached), bit 1 rewrites each body's seq to the expected one.
A Drop ends the input, as it ends the connection; any other exception is a
finding.

  rendezvous_server_fuzz.py --replay DIR...       every file once
  rendezvous_server_fuzz.py --seconds N DIR...    atheris (libFuzzer) for N s
                                                  from DIR, when installed;
                                                  else a seeded random driver
  rendezvous_server_fuzz.py --write-seeds DIR     the seed corpus
"""

import argparse
import io
import os
import random
import struct
import sys
import time

# Imported by load(), under atheris's instrumentation when it fuzzes.
protocol = Drop = Rendezvous = Session = Store = None

SECRET = bytes(range(32))
NONCE = bytes(16)
SIZE = 2
JOB = "job"

_service = None


def load():
    global protocol, Drop, Rendezvous, Session, Store
    from horovod.runner import protocol
    from horovod.runner.rendezvous import Drop, Rendezvous, Session, Store


def service():
    """One service for every input (its listener is never started); the
    store is emptied before each."""
    global _service
    if _service is None:
        _service = Rendezvous("127.0.0.1", SIZE, SECRET, JOB)
        _service.max_wait_s = 0.0  # a GET or ALLGATHER answers at once
    _service.world = Store(SIZE, _service.changed)
    _service.joined.clear()
    _service.unjoined.clear()
    _service.connections = 0
    return _service


def run_one(data):
    if not data:
        return
    flags, at = data[0], 1
    session = Session(service(), "fuzz", NONCE)
    quiet, sys.stderr = sys.stderr, io.StringIO()  # refusals log a line each
    try:
        while at + 2 <= len(data):
            n = struct.unpack(">H", data[at:at + 2])[0]
            body = bytearray(data[at + 2:at + 2 + n])
            at += 2 + n
            if flags & 2 and len(body) >= 8:
                body[:8] = struct.pack(">Q", session.seq)
            body = bytes(body)
            tag = (protocol.frame_tag(SECRET, protocol.CLIENT, NONCE, body)
                   if flags & 1 else bytes(protocol.TAG_BYTES))
            try:
                session.check_length(protocol.TAG_BYTES + len(body))
                response, last = session.handle(tag + body)
            except Drop:
                return
            if struct.unpack(">I", response[:4])[0] != len(response) - 4:
                raise AssertionError("a response with a wrong length prefix")
            if last:
                return
    finally:
        sys.stderr = quiet


def frame(seq, op, fields):
    body = struct.pack(">QB", seq, op) + fields
    return struct.pack(">H", len(body)) + body


def seeds():
    join = struct.pack(">II", 0, SIZE) + protocol.pack_str(JOB) + \
        protocol.pack_str("host")
    put = protocol.pack_str("k") + protocol.pack_blob(b"v")
    get = struct.pack(">I", 0) + protocol.pack_str("k") + struct.pack(">I", 0)
    gather = protocol.pack_str("c") + protocol.pack_blob(b"x") + \
        struct.pack(">I", 0)
    session = (frame(0, protocol.OP_JOIN, join) +
               frame(1, protocol.OP_PUT, put) +
               frame(2, protocol.OP_GET, get) +
               frame(3, protocol.OP_ALLGATHER, gather))
    yield "signed_session", bytes([3]) + session
    yield "unsigned_session", bytes([0]) + session
    yield "put_before_join", bytes([3]) + frame(0, protocol.OP_PUT, put)
    yield "wrong_job", bytes([3]) + frame(0, protocol.OP_JOIN, struct.pack(
        ">II", 5, 9) + protocol.pack_str("other") + protocol.pack_str("h"))
    yield "short_put", bytes([3]) + frame(0, protocol.OP_JOIN, join) + \
        frame(1, protocol.OP_PUT, protocol.pack_str("k") +
              struct.pack(">I", 1000) + b"short")
    yield "unknown_op", bytes([3]) + frame(0, protocol.OP_JOIN, join) + \
        frame(1, 0x33, b"")


def inputs(paths):
    for path in paths:
        names = sorted(os.listdir(path)) if os.path.isdir(path) else [None]
        for name in names:
            file = os.path.join(path, name) if name else path
            with open(file, "rb") as f:
                yield f.read()


def random_driver(corpus, seconds, seed):
    """Mutates corpus inputs (bit flips, cuts, splices, random bytes) and
    runs them, for `seconds`."""
    rng = random.Random(seed)
    pool = corpus or [b"\x03"]
    runs, end = 0, time.monotonic() + seconds
    while time.monotonic() < end:
        data = bytearray(rng.choice(pool))
        for _ in range(rng.randint(1, 8)):
            kind = rng.randrange(4)
            if kind == 0 and data:
                data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
            elif kind == 1 and data:
                del data[rng.randrange(len(data)):]
            elif kind == 2:
                data[rng.randrange(len(data) + 1):0] = rng.choice(pool)
            else:
                at = rng.randrange(len(data) + 1)
                data[at:at] = rng.randbytes(rng.randint(1, 16))
        run_one(bytes(data))
        runs += 1
    print(f"fuzz: rendezvous_server (seeded random driver, seed {seed}) "
          f"{runs} runs, {runs / seconds:.0f} execs/s")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--replay", action="store_true")
    parser.add_argument("--seconds", type=int)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--write-seeds")
    parser.add_argument("paths", nargs="*")
    args = parser.parse_args()

    try:
        import atheris
    except ImportError:
        atheris = None
    if atheris is not None and args.seconds is not None:
        with atheris.instrument_imports(include=["horovod"]):
            load()
    else:
        load()

    if args.write_seeds:
        os.makedirs(args.write_seeds, exist_ok=True)
        for name, data in seeds():
            with open(os.path.join(args.write_seeds, name), "wb") as f:
                f.write(data)
        return
    corpus = list(inputs(args.paths))
    if args.replay:
        if not corpus:
            sys.exit("no inputs in the given paths")
        for data in corpus:
            run_one(data)
        print(f"{len(corpus)} inputs ran")
        return
    if atheris is None:
        random_driver(corpus, args.seconds, args.seed)
        return
    work = os.environ.get("HOROVOD_FUZZ_WORK", "")
    libfuzzer_args = [sys.argv[0], f"-max_total_time={args.seconds}",
                      "-print_final_stats=1", "-timeout=10"]
    if work:
        os.makedirs(os.path.join(work, "new"), exist_ok=True)
        libfuzzer_args += [f"-artifact_prefix={work}/",
                           os.path.join(work, "new")]
    atheris.Setup(libfuzzer_args + args.paths, run_one)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
