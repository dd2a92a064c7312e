"""The rendezvous protocol's wire format (tools/horovodrun/PROTOCOL.md):
constants, the reader of a request's fields, the writers of a reply's, and
the HMAC that authenticates every frame."""

import hashlib
import hmac
import struct

MAGIC = b"HVR1"
NONCE_BYTES = 16
TAG_BYTES = 32
MAX_KEY_BYTES = 1024
MAX_VALUE_BYTES = 1 << 20
MIN_FRAME = TAG_BYTES + 9
MAX_FRAME = MAX_VALUE_BYTES + 2048
# What one rank may hold in a store: distinct keys, and bytes of its keys
# and values together. A PUT or ALLGATHER past either is refused (ERROR).
MAX_KEYS_PER_RANK = 16384
MAX_BYTES_PER_RANK = 16 << 20
# Before its JOIN a connection may send only a JOIN: seq, op, rank, size and
# two strings of at most MAX_KEY_BYTES.
MAX_JOIN_FRAME = TAG_BYTES + 9 + 8 + 2 * (2 + MAX_KEY_BYTES)
# Seconds a new connection has to send a valid JOIN.
JOIN_WINDOW_S = 10.0
# Connections still without a valid JOIN, at most; past it the oldest is
# closed (a rank sends its JOIN at once, a stranger may never).
MAX_UNJOINED = 64
# The longest a GET or ALLGATHER waits, whatever its timeout_ms asks.
MAX_WAIT_S = 24 * 3600.0
OP_JOIN, OP_PUT, OP_GET, OP_ALLGATHER = 1, 2, 3, 4
# An elastic job's workers: who they are, their place in the next world, and
# whether the membership changed since.
OP_WORKER, OP_ASSIGN, OP_UPDATES = 5, 6, 7
OP_NAMES = {OP_JOIN: "JOIN", OP_PUT: "PUT", OP_GET: "GET",
            OP_ALLGATHER: "ALLGATHER", OP_WORKER: "WORKER",
            OP_ASSIGN: "ASSIGN", OP_UPDATES: "UPDATES"}
RESPONSE_BIT = 0x80
STATUS_OK, STATUS_TIMEOUT, STATUS_ERROR = 0, 1, 2
CLIENT, SERVER = b"C", b"S"  # the direction each frame's tag covers


class Drop(Exception):
    """A frame the service refuses: logged, and the connection closed."""


class Malformed(Exception):
    """A request whose fields do not parse."""


class Reader:
    """Reads a request body's fields in order, checking every bound."""

    def __init__(self, data):
        self.data, self.pos = data, 0

    def take(self, n):
        if n > len(self.data) - self.pos:
            raise Malformed("field runs past the end of the message")
        chunk = self.data[self.pos:self.pos + n]
        self.pos += n
        return chunk

    def u8(self):
        return self.take(1)[0]

    def u32(self):
        return struct.unpack(">I", self.take(4))[0]

    def u64(self):
        return struct.unpack(">Q", self.take(8))[0]

    def str(self, limit):
        n = struct.unpack(">H", self.take(2))[0]
        if n > limit:
            raise Malformed(f"string of {n} bytes exceeds {limit}")
        try:
            return self.take(n).decode("utf-8")
        except UnicodeDecodeError:
            raise Malformed("string is not UTF-8") from None

    def blob(self, limit):
        n = self.u32()
        if n > limit:
            raise Malformed(f"value of {n} bytes exceeds {limit}")
        return self.take(n)

    def at_end(self):
        return self.pos == len(self.data)

    def end(self):
        if self.pos != len(self.data):
            raise Malformed(f"{len(self.data) - self.pos} bytes left over")


def pack_str(s):
    b = s.encode("utf-8")
    return struct.pack(">H", len(b)) + b


def pack_blob(b):
    return struct.pack(">I", len(b)) + b


def frame_tag(secret, direction, nonce, body):
    return hmac.new(secret, MAGIC + direction + nonce + body,
                    hashlib.sha256).digest()
