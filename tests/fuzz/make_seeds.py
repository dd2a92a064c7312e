#!/usr/bin/env python3
"""Writes the seed inputs of tests/fuzz/corpus/ (run from anywhere; the
committed corpus is its output plus every regression input found since).
Layouts follow the structs of transports/tcp/protocol.h,
transports/shm/protocol.h and ring.h, core/src/control/frames.h and
tools/horovodrun/PROTOCOL.md."""

import glob
import hashlib
import hmac
import os
import shutil
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CORPUS = os.path.join(HERE, "corpus")


def write(target, name, data):
    folder = os.path.join(CORPUS, target)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


def config_seeds():
    files = [os.path.join(ROOT, "config", "horovod.toml")]
    files += sorted(glob.glob(os.path.join(ROOT, "tests", "*", "configs",
                                           "*.toml")))
    for path in files:
        name = os.path.relpath(path, ROOT).replace("/", "_")
        shutil.copy(path, os.path.join(CORPUS, "config", name))
    write("config", "plugin_tables.toml", b"""\
[transport]
inter = "ofi"
[transport.ofi]
provider = "efa"
rails = 4
ratio = 0.5
fork_safe = true
domains = ["rdmap0", "rdmap1"]
tuning.eager = "8KiB"
[transport.ofi.retry]
count = 3
[reducer.ring]
chunk = "1MiB"
[adapter.torch]
streams = 2
[[allreduce.rules]]
max_bytes = "64KiB"
reducer = "tree"
[[allreduce.rules]]
min_bytes = "64KiB"
reducer = "ring"
""")


# ---- control plane: u32 length, u32 type (little-endian), payload ----

def cstr(text):
    b = text.encode()
    return struct.pack("<I", len(b)) + b


def cframe(kind, payload):
    return struct.pack("<II", len(payload), kind) + payload


def control_seeds():
    hello = struct.pack("<IIIIQQ", 0x43445648, 1, 3, 4, 7, 0x1234) + \
        cstr("job-1") + cstr("host-a")
    welcome = struct.pack("<I", 1) + cstr("host-b")
    note = struct.pack("<I", 2) + cstr("host-c") + cstr("connection reset")
    reject = struct.pack("<i", -7) + cstr("world epoch 3")
    world = 3
    bundle = b"".join(struct.pack("<II", r, 2) + bytes([r, r])
                      for r in (2, 0, 1))
    gather = struct.pack("<Q", world - 1) + bundle
    table = struct.pack("<I", 2) + cstr("a") + cstr("b") + \
        struct.pack("<I", world) + struct.pack("<III", 0, 1, 0)
    broadcast = struct.pack("<Q", world - 1) + table
    stream = (cframe(1, hello) + cframe(2, welcome) + cframe(4, b"") +
              cframe(5, gather) + cframe(6, broadcast) + cframe(7, note) +
              cframe(3, reject) + cframe(8, b""))
    write("control_frames", "handshake_whole", bytes([1 | (127 << 1)]) +
          cframe(1, hello))
    write("control_frames", "link_stream_pieces", bytes([0 | (7 << 1)]) +
          stream)
    write("control_frames", "oversized_handshake", bytes([1]) +
          struct.pack("<II", 1 << 20, 1))


# ---- tcp: Hello, then FrameHeaders (native little-endian structs) ----

def tcp_seeds():
    hello = struct.pack("<IHHHHiiIQQ", 0x48565448, 1, 0, 4, 0, 1, 0, 0, 5,
                        0xabcdef)
    headers = struct.pack("<QQII", 9, 100, 1, 0) + \
        struct.pack("<QQII", 9, 1 << 20, 4, 1) + \
        struct.pack("<QQII", 9, 0, 1, 2)
    write("tcp_wire", "four_streams", bytes([3]) + hello + headers)
    write("tcp_wire", "one_stream", bytes([0]) + hello +
          struct.pack("<QQII", 1, 10, 1, 0))


# ---- shm: Hello, SegmentHeader, the segment's size ----

def shm_seeds():
    ring = 1 << 20
    hello = struct.pack("<IHHiiQiIQ", 0x48565348, 1, 1, 1, 0, 5, 0, 4242,
                        ring) + b"/hvd-prefix".ljust(96, b"\0") + \
        b"/hvd-segment".ljust(96, b"\0")
    header_size = 448  # sizeof(SegmentHeader): 64 + 2 x 64 + 2 x 128
    data_offset = 4096
    header = struct.pack("<IIQQ", 0x48564452, 1, ring, data_offset)
    header = header.ljust(header_size, b"\0")
    size = struct.pack("<Q", data_offset + 2 * ring)
    write("shm_wire", "hello_and_segment", bytes([3]) + hello + header + size)
    reply = bytearray(hello)
    reply[6:8] = struct.pack("<H", 2)
    write("shm_wire", "reply", bytes([2]) + bytes(reply) + header + size)


# ---- rendezvous responses: flags byte, then the body after the tag ----

def rendezvous_seeds():
    def blob(b):
        return struct.pack(">I", len(b)) + b
    head = struct.pack(">QBB", 3, 0x84, 0)
    ranks = 3
    flags = 1 | ((ranks - 1) << 1)
    gather = struct.pack(">I", ranks) + blob(b"a") + blob(b"") + blob(b"cc")
    write("rendezvous", "allgather_ok", bytes([flags]) + head + gather)
    timeout = struct.pack(">QBB", 3, 0x84, 1) + struct.pack(">III", 2, 0, 2)
    write("rendezvous", "timeout", bytes([flags]) + timeout)
    write("rendezvous", "get_value", bytes([flags]) + head + blob(b"value"))
    write("rendezvous", "unsigned", bytes([0]) + head + gather)


if __name__ == "__main__":
    os.makedirs(os.path.join(CORPUS, "config"), exist_ok=True)
    config_seeds()
    control_seeds()
    tcp_seeds()
    shm_seeds()
    rendezvous_seeds()
