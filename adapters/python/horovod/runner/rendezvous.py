"""The rendezvous service: the job's key-value store, served over TCP to the
ranks that authenticate with the job's secret (tools/horovodrun/
PROTOCOL.md). One thread accepts, one thread serves each connection; a
Session holds one connection's protocol state, free of sockets."""

import collections
import hmac
import secrets
import socket
import struct
import threading
import time

from horovod.runner.log import Fatal, log, vlog
from horovod.runner.protocol import (
    CLIENT, JOIN_WINDOW_S, MAGIC, MAX_FRAME, MAX_JOIN_FRAME, MAX_KEY_BYTES,
    MAX_UNJOINED, MAX_VALUE_BYTES, MAX_WAIT_S, MIN_FRAME, NONCE_BYTES,
    OP_ALLGATHER, OP_GET, OP_JOIN, OP_NAMES, OP_PUT, RESPONSE_BIT, SERVER,
    STATUS_ERROR, STATUS_OK, STATUS_TIMEOUT, TAG_BYTES, Malformed, Reader,
    frame_tag, pack_blob, pack_str)


class Drop(Exception):
    """A frame the service refuses: logged, and the connection closed."""


class StrangerLog:
    """Lines about connections that never joined: the first few of every
    `window_s` are printed, the rest counted and summed up once the window
    is over, so a flood cannot flood horovodrun's stderr too."""

    def __init__(self, per_window=10, window_s=5.0):
        self.per_window, self.window_s = per_window, window_s
        self.lock = threading.Lock()
        self.window_start, self.printed, self.held = time.monotonic(), 0, 0

    def __call__(self, message):
        with self.lock:
            now = time.monotonic()
            if now - self.window_start >= self.window_s:
                if self.held:
                    log(f"rendezvous: {self.held} more lines about "
                        f"connections that never joined in the last "
                        f"{now - self.window_start:.0f} s")
                self.window_start, self.printed, self.held = now, 0, 0
            if self.printed >= self.per_window:
                self.held += 1
                return
            self.printed += 1
        log(message)


class Session:
    """One connection's protocol state: the nonce of its greeting, the next
    sequence number, and the rank of its JOIN (None before). `conn` is the
    socket (None when frames come from elsewhere, as in tests/fuzz)."""

    def __init__(self, service, peer, nonce, conn=None):
        self.service, self.peer, self.nonce = service, peer, nonce
        self.conn = conn
        self.seq, self.rank = 0, None
        self.counted = False  # in the service's budget of joined connections

    def check_length(self, n):
        """Drop unless a frame of `n` bytes can follow the length prefix:
        before the JOIN only a JOIN fits."""
        limit = MAX_FRAME if self.rank is not None else MAX_JOIN_FRAME
        if n < MIN_FRAME or n > limit:
            raise Drop(f"frame length {n} outside {MIN_FRAME}..{limit}")

    def handle(self, frame):
        """Serves one frame (tag, then body). Returns the response frame,
        length prefix included, and whether the connection ends after it."""
        service = self.service
        tag, body = frame[:TAG_BYTES], frame[TAG_BYTES:]
        if not hmac.compare_digest(
                tag, frame_tag(service.secret, CLIENT, self.nonce, body)):
            raise Drop("bad HMAC")
        reader = Reader(body)
        got_seq, op = reader.u64(), reader.u8()
        if got_seq != self.seq:
            raise Drop(f"sequence number {got_seq}, expected {self.seq} "
                       f"(a replayed or reordered message)")
        self.seq += 1
        if op not in OP_NAMES:
            raise Drop(f"unknown op {op}")
        if self.rank is None and op != OP_JOIN:
            raise Drop(f"{OP_NAMES[op]} before JOIN")
        try:
            status, fields, rank = service._handle(op, reader, self.rank,
                                                   self.peer)
        except Malformed as e:
            raise Drop(f"malformed {OP_NAMES[op]}: {e}") from None
        if self.rank is None and rank is not None:
            service._joined_connection(self)
        self.rank = rank
        reply = struct.pack(">QBB", got_seq, op | RESPONSE_BIT,
                            status) + fields
        tag = frame_tag(service.secret, SERVER, self.nonce, reply)
        return (struct.pack(">I", TAG_BYTES + len(reply)) + tag + reply,
                status == STATUS_ERROR)


class Rendezvous:
    """The store of one job of `size` ranks, listening on `address`."""

    def __init__(self, address, size, secret, job_id):
        self.size, self.secret, self.job_id = size, secret, job_id
        self.store = {}  # (rank, key) -> bytes
        self.holders = {}  # key -> how many ranks have put it
        self.changed = threading.Condition()
        self.joined = {}  # rank -> host name given in its first JOIN
        # Connections that have joined, and those that have not yet (in the
        # order they came, socket -> peer name): separate budgets, so
        # strangers never take a rank's place.
        self.connections = 0
        self.max_connections = 4 * size + 64
        self.unjoined = collections.OrderedDict()
        self.max_wait_s = MAX_WAIT_S
        self.stranger_log = StrangerLog()
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self.listener.bind((address, 0))
        except OSError as e:
            raise Fatal(f"cannot bind the rendezvous service to {address}: "
                        f"{e.strerror}") from None
        self.listener.listen(1024)
        self.address, self.port = self.listener.getsockname()[:2]

    def start(self):
        threading.Thread(target=self._accept_loop, name="rendezvous",
                         daemon=True).start()

    def joined_ranks(self):
        with self.changed:
            return set(self.joined)

    def _accept_loop(self):
        while True:
            try:
                conn, peer = self.listener.accept()
            except OSError:
                return
            peer_name = f"{peer[0]}:{peer[1]}"
            with self.changed:
                evicted = None
                if len(self.unjoined) >= MAX_UNJOINED:
                    evicted = self.unjoined.popitem(last=False)
                self.unjoined[conn] = peer_name
            if evicted is not None:
                self.stranger_log(
                    f"rendezvous: closed connection from {evicted[1]}: no "
                    f"valid JOIN before {MAX_UNJOINED} newer connections")
                try:  # its thread sees the end of stream and finishes
                    evicted[0].shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            threading.Thread(target=self._serve, args=(conn, peer_name),
                             daemon=True).start()

    def _joined_connection(self, session):
        """A connection's first valid JOIN: it moves to the ranks' budget, or
        is refused when that is full."""
        with self.changed:
            self.unjoined.pop(session.conn, None)
            full = self.connections >= self.max_connections
            if not full:
                self.connections += 1
                session.counted = True
        if full:
            raise Drop(f"{self.max_connections} connections of ranks open")

    def _serve(self, conn, peer):
        session = Session(self, peer, secrets.token_bytes(NONCE_BYTES), conn)
        try:
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._serve_frames(conn, session)
        except Drop as e:
            message = f"rendezvous: dropped message from {peer}: {e}"
            if session.rank is None:
                self.stranger_log(message)
            else:
                log(message)
        except socket.timeout:
            self.stranger_log(
                f"rendezvous: closed connection from {peer}: no valid JOIN "
                f"within {JOIN_WINDOW_S:g} s")
        except OSError:
            pass  # the peer went away
        except Exception as e:  # never let one connection stop the service
            log(f"rendezvous: internal error serving {peer}: {e!r}")
        finally:
            conn.close()
            with self.changed:
                self.unjoined.pop(conn, None)
                if session.counted:
                    self.connections -= 1

    @staticmethod
    def _recv_exact(conn, n, deadline, at_boundary=False):
        chunks, got = [], 0
        while got < n:
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise socket.timeout()
                conn.settimeout(left)
            else:
                conn.settimeout(None)
            chunk = conn.recv(min(n - got, 1 << 16))
            if not chunk:
                if at_boundary and got == 0:
                    return None
                raise Drop(f"connection closed inside a frame "
                           f"({got} of {n} bytes)")
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)

    def _serve_frames(self, conn, session):
        conn.sendall(MAGIC + session.nonce)
        deadline = time.monotonic() + JOIN_WINDOW_S  # until a valid JOIN
        while True:
            head = self._recv_exact(conn, 4, deadline, at_boundary=True)
            if head is None:
                return
            n = struct.unpack(">I", head)[0]
            session.check_length(n)
            frame = self._recv_exact(conn, n, deadline)
            response, last = session.handle(frame)
            if session.rank is not None:
                deadline = None
            conn.settimeout(None)
            conn.sendall(response)
            if last:
                return

    def _store(self, rank, key, value):
        """Under self.changed."""
        if (rank, key) not in self.store:
            self.holders[key] = self.holders.get(key, 0) + 1
        self.store[(rank, key)] = value
        self.changed.notify_all()

    def _handle(self, op, reader, rank, peer):
        """Returns (status, response fields, the connection's rank)."""
        handler = {OP_JOIN: self._join, OP_PUT: self._put, OP_GET: self._get,
                   OP_ALLGATHER: self._allgather}[op]
        return handler(reader, rank, peer)

    def _join(self, reader, rank, peer):
        r, size = reader.u32(), reader.u32()
        job_id = reader.str(MAX_KEY_BYTES)
        host = reader.str(MAX_KEY_BYTES)
        reader.end()
        if size != self.size or job_id != self.job_id or r >= size:
            message = (f"JOIN as rank {r} of {size} in job {job_id!r}, but "
                       f"this is job {self.job_id!r} of {self.size} ranks")
            log(f"rendezvous: refused {peer}: {message}")
            return STATUS_ERROR, pack_str(message), rank
        with self.changed:
            first = r not in self.joined
            self.joined.setdefault(r, host)
            self.changed.notify_all()
        if first:
            vlog(f"rank {r} reached the rendezvous from {host} ({peer})")
        return STATUS_OK, b"", r

    def _put(self, reader, rank, peer):
        key = reader.str(MAX_KEY_BYTES)
        value = reader.blob(MAX_VALUE_BYTES)
        reader.end()
        with self.changed:
            self._store(rank, key, value)
        return STATUS_OK, b"", rank

    def _get(self, reader, rank, peer):
        owner = reader.u32()
        key = reader.str(MAX_KEY_BYTES)
        timeout = min(reader.u32() / 1000.0, self.max_wait_s)
        reader.end()
        if owner >= self.size:
            return (STATUS_ERROR,
                    pack_str(f"rank {owner} is outside the job of "
                             f"{self.size} ranks"), rank)
        with self.changed:
            if self.changed.wait_for(lambda: (owner, key) in self.store,
                                     timeout):
                return STATUS_OK, pack_blob(self.store[(owner, key)]), rank
        return STATUS_TIMEOUT, struct.pack(">II", 1, owner), rank

    def _allgather(self, reader, rank, peer):
        key = reader.str(MAX_KEY_BYTES)
        value = reader.blob(MAX_VALUE_BYTES)
        timeout = min(reader.u32() / 1000.0, self.max_wait_s)
        reader.end()
        with self.changed:
            self._store(rank, key, value)
            if self.changed.wait_for(
                    lambda: self.holders[key] == self.size, timeout):
                fields = struct.pack(">I", self.size) + b"".join(
                    pack_blob(self.store[(r, key)]) for r in range(self.size))
                return STATUS_OK, fields, rank
            absent = [r for r in range(self.size)
                      if (r, key) not in self.store]
        return (STATUS_TIMEOUT,
                struct.pack(f">I{len(absent)}I", len(absent), *absent), rank)
