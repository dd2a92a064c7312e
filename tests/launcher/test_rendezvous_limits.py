"""The rendezvous service's limits, in process: frames before a JOIN are
no longer than a JOIN, connections without a JOIN have a budget of their
own (the oldest is closed past it) and a window to send it in, and no
thread until a first frame verifies; a GET waits no longer than the cap,
and lines about strangers are rate-limited."""

import io
import os
import socket
import struct
import subprocess
import sys
import threading
import time
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
ADAPTERS = os.path.join(HERE, "..", "..", "adapters", "python")
sys.path.insert(0, ADAPTERS)

from horovod.runner import log, protocol  # noqa: E402
from horovod.runner.rendezvous import (  # noqa: E402
    Drop, Rendezvous, Session, StrangerLog)

import launcher_testlib as lib  # noqa: E402

SECRET = bytes(32)
JOIN = struct.pack(">II", 0, 2) + lib.pack_str("job") + lib.pack_str("h")


# A service with room for a few more descriptors only, and a short JOIN
# window; it prints its port and serves until its stdin closes.
SERVICE_SHORT_OF_FDS = """
import os, resource, sys
sys.path.insert(0, sys.argv[1])
from horovod.runner.rendezvous import Rendezvous
service = Rendezvous("127.0.0.1", 2, bytes(32), "job")
service.join_window_s = 0.5
service.start()
room = len(os.listdir("/proc/self/fd")) + 6
resource.setrlimit(resource.RLIMIT_NOFILE,
                   (room, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
print(service.port, flush=True)
sys.stdin.read()
"""


def body(seq, op, fields):
    return struct.pack(">QB", seq, op) + fields


def signed(nonce, data):
    return protocol.frame_tag(SECRET, protocol.CLIENT, nonce, data) + data


class Limits(unittest.TestCase):
    def setUp(self):
        self.service = Rendezvous("127.0.0.1", 2, SECRET, "job")

    def tearDown(self):
        self.service.listener.close()

    def test_frames_before_a_join_are_no_longer_than_a_join(self):
        session = Session(self.service, "test", bytes(16))
        session.check_length(protocol.MAX_JOIN_FRAME)
        with self.assertRaisesRegex(Drop, r"frame length 2102 outside 41\.\.2101"):
            session.check_length(protocol.MAX_JOIN_FRAME + 1)
        with mock.patch.object(log, "log"):
            response, last = session.handle(signed(session.nonce,
                                                   body(0, protocol.OP_JOIN,
                                                        JOIN)))
        self.assertFalse(last)
        self.assertEqual(session.rank, 0)
        session.check_length(protocol.MAX_FRAME)  # a PUT of 1 MiB now fits
        with self.assertRaisesRegex(Drop, "outside"):
            session.check_length(protocol.MAX_FRAME + 1)

    def test_a_get_waits_no_longer_than_the_cap(self):
        self.service.max_wait_s = 0.2
        session = Session(self.service, "test", bytes(16))
        session.handle(signed(session.nonce, body(0, protocol.OP_JOIN, JOIN)))
        get = struct.pack(">I", 1) + lib.pack_str("never") + \
            struct.pack(">I", 0xffffffff)  # 49 days
        started = time.monotonic()
        response, _ = session.handle(signed(session.nonce,
                                            body(1, protocol.OP_GET, get)))
        self.assertLess(time.monotonic() - started, 5)
        self.assertEqual(response[4 + 32 + 9], protocol.STATUS_TIMEOUT)

    def test_silent_connections_beyond_the_budget_close_the_oldest(self):
        self.service.start()
        address = (self.service.address, self.service.port)
        with mock.patch.object(sys, "stderr", io.StringIO()):
            oldest = socket.create_connection(address, timeout=10)
            self.assertEqual(lib.recv_exact(oldest, 4), protocol.MAGIC)
            others = [socket.create_connection(address, timeout=10)
                      for _ in range(protocol.MAX_UNJOINED)]
            # The service closed the oldest: greeting, then end of stream.
            oldest.settimeout(5)  # long before the 10 s JOIN window
            rest = b""
            while True:
                chunk = oldest.recv(64)
                if not chunk:
                    break
                rest += chunk
            self.assertEqual(len(rest), 16)
            # A rank still joins: the strangers hold no place of its.
            client = socket.create_connection(address, timeout=10)
            self.assertEqual(self.join(client), protocol.STATUS_OK)
            for s in others + [oldest, client]:
                s.close()
        with self.service.changed:
            self.assertLessEqual(len(self.service.unjoined),
                                 protocol.MAX_UNJOINED)

    def wait_closed(self, conn):
        """Reads `conn` to its end (at most 5 s); what came after the
        greeting."""
        conn.settimeout(5)
        rest = b""
        while True:
            chunk = conn.recv(64)
            if not chunk:
                return rest
            rest += chunk

    def test_connections_without_a_join_close_after_the_window(self):
        self.service.join_window_s = 0.3
        self.service.start()
        address = (self.service.address, self.service.port)
        lines = []
        with mock.patch("horovod.runner.rendezvous.log", lines.append):
            silent = socket.create_connection(address, timeout=10)
            cut = socket.create_connection(address, timeout=10)
            cut.sendall(struct.pack(">I", 100) + b"part of a frame")
            for conn in (silent, cut):
                self.assertEqual(lib.recv_exact(conn, 20)[:4],
                                 protocol.MAGIC)
                self.assertEqual(self.wait_closed(conn), b"")
                conn.close()
        self.assertEqual(len([x for x in lines if
                              "no valid JOIN within 0.3 s" in x]), 2, lines)

    def test_strangers_get_no_thread(self):
        self.service.start()
        address = (self.service.address, self.service.port)
        threads = threading.active_count()
        forged = struct.pack(">I", 32 + 9 + len(JOIN)) + bytes(32) + \
            body(0, protocol.OP_JOIN, JOIN)
        with mock.patch("horovod.runner.rendezvous.log"):
            strangers = []
            for i in range(20):
                conn = socket.create_connection(address, timeout=10)
                lib.recv_exact(conn, 20)  # accepted: greeted
                if i % 2:
                    conn.sendall(forged)
                    self.assertEqual(self.wait_closed(conn), b"")
                strangers.append(conn)
            # Ten of them silent and open, ten refused: no thread for any.
            self.assertEqual(threading.active_count(), threads)
            client = socket.create_connection(address, timeout=10)
            self.assertEqual(self.join(client), protocol.STATUS_OK)
            # The rank's connection has a thread of its own.
            self.assertEqual(threading.active_count(), threads + 1)
            for conn in strangers + [client]:
                conn.close()

    def join(self, client):
        """Sends a valid JOIN on `client`; the response's status."""
        nonce = lib.recv_exact(client, 20)[4:]
        client.sendall(struct.pack(">I", 32 + 9 + len(JOIN)) +
                       signed(nonce, body(0, protocol.OP_JOIN, JOIN)))
        n = struct.unpack(">I", lib.recv_exact(client, 4))[0]
        return lib.recv_exact(client, n)[32 + 9]

    def test_the_service_outlives_running_out_of_descriptors(self):
        child = subprocess.Popen(
            [sys.executable, "-c", SERVICE_SHORT_OF_FDS, ADAPTERS],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)
        try:
            address = ("127.0.0.1", int(child.stdout.readline()))
            strangers = [socket.create_connection(address, timeout=10)
                         for _ in range(20)]
            # Accepted once strangers' windows have ended and freed theirs.
            client = socket.create_connection(address, timeout=10)
            self.assertEqual(self.join(client), protocol.STATUS_OK)
            for conn in strangers + [client]:
                conn.close()
        finally:
            _, err = child.communicate(timeout=10)
        self.assertIn("rendezvous: cannot accept a connection: [Errno 24]",
                      err)

    def joined(self, rank):
        session = Session(self.service, f"peer{rank}", bytes(16))
        join = struct.pack(">II", rank, 2) + lib.pack_str("job") + \
            lib.pack_str("h")
        session.handle(signed(session.nonce, body(0, protocol.OP_JOIN, join)))
        return session

    def request(self, session, op, fields):
        """(status, text of an ERROR) of one request."""
        response, _ = session.handle(signed(session.nonce,
                                            body(session.seq, op, fields)))
        status = response[4 + 32 + 9]
        text = response[4 + 32 + 10 + 2:].decode() if status else ""
        return status, text

    def put(self, session, key, value):
        return self.request(session, protocol.OP_PUT,
                            lib.pack_str(key) + struct.pack(">I", len(value))
                            + value)

    def test_a_rank_holds_a_bounded_number_of_keys(self):
        session, other = self.joined(0), self.joined(1)
        for i in range(protocol.MAX_KEYS_PER_RANK):
            self.assertEqual(self.put(session, f"k{i}", b"v"),
                             (protocol.STATUS_OK, ""))
        # Replacing a value adds no key; a new key is one too many, for this
        # rank only.
        self.assertEqual(self.put(session, "k0", b"w")[0], protocol.STATUS_OK)
        with mock.patch("horovod.runner.rendezvous.log") as logged:
            status, text = self.put(session, "one more", b"v")
        self.assertEqual(status, protocol.STATUS_ERROR)
        self.assertIn("PUT of key 'one more' refused: rank 0 would hold "
                      f"{protocol.MAX_KEYS_PER_RANK + 1} keys", text)
        self.assertIn(text, logged.call_args[0][0])
        self.assertEqual(self.put(other, "one more", b"v")[0],
                         protocol.STATUS_OK)

    def test_a_rank_holds_a_bounded_number_of_bytes(self):
        session = self.joined(0)
        value = bytes(protocol.MAX_VALUE_BYTES)
        held = 0
        for i in range(protocol.MAX_BYTES_PER_RANK // (len(value) + 8)):
            self.assertEqual(self.put(session, f"big{i}", value)[0],
                             protocol.STATUS_OK)
            held += len(value) + len(f"big{i}")
        with mock.patch("horovod.runner.rendezvous.log"):
            allgather = lib.pack_str("gather") + \
                struct.pack(">I", len(value)) + value + struct.pack(">I", 0)
            status, text = self.request(session, protocol.OP_ALLGATHER,
                                        allgather)
        self.assertEqual(status, protocol.STATUS_ERROR)
        self.assertIn("ALLGATHER of key 'gather' refused: rank 0 would hold",
                      text)
        self.assertIn(f"{held + len(value) + len('gather')} bytes", text)
        # Nothing of the refused value was kept.
        with self.service.changed:
            self.assertNotIn((0, "gather"), self.service.world.values)

    def test_lines_about_strangers_are_rate_limited(self):
        lines = []
        with mock.patch("horovod.runner.rendezvous.log", lines.append):
            stranger_log = StrangerLog(per_window=3, window_s=0.2)
            for i in range(50):
                stranger_log(f"line {i}")
            time.sleep(0.25)
            stranger_log("after")
        self.assertEqual(lines, ["line 0", "line 1", "line 2",
                                 "rendezvous: 47 more lines about connections "
                                 "that never joined in the last 0 s", "after"])


if __name__ == "__main__":
    unittest.main()
