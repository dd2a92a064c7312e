"""The rendezvous service: the job's key-value store, served over TCP to the
ranks that authenticate with the job's secret (tools/horovodrun/
PROTOCOL.md). One thread accepts every connection and serves its opening
up to a first frame that verifies (rendezvous_door.py), so strangers get no
thread; each connection that knows the job's secret then has a thread of
its own. A Session holds one connection's protocol state, free of
sockets."""

import collections
import hmac
import secrets
import socket
import struct
import threading
import time

from horovod.runner.log import Fatal, log, vlog
from horovod.runner.protocol import (
    CLIENT, JOIN_WINDOW_S, MAX_BYTES_PER_RANK, MAX_FRAME,
    MAX_JOIN_FRAME, MAX_KEY_BYTES, MAX_KEYS_PER_RANK,
    MAX_VALUE_BYTES, MAX_WAIT_S, MIN_FRAME, NONCE_BYTES, Drop,
    OP_ALLGATHER, OP_GET, OP_JOIN, OP_NAMES, OP_PUT, RESPONSE_BIT, SERVER,
    STATUS_ERROR, STATUS_OK, STATUS_TIMEOUT, TAG_BYTES, Malformed, Reader,
    frame_tag, pack_blob, pack_str)
from horovod.runner.rendezvous_door import Door


class OverBudget(Exception):
    """A PUT or ALLGATHER past what one rank may hold in a store."""


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


class Store:
    """The key-value store of one world of `size` ranks: the job's, or one
    round's of an elastic job. Its methods run under `changed`, the
    service's condition; a closed store answers its waiters with ERROR.
    A rank holds at most `max_keys` keys and `max_bytes` bytes of keys and
    values (protocol.MAX_KEYS_PER_RANK, MAX_BYTES_PER_RANK)."""

    def __init__(self, size, changed):
        self.size, self.changed = size, changed
        self.values = {}  # (rank, key) -> bytes
        self.holders = {}  # key -> how many ranks have put it
        self.held = {}  # rank -> (keys, bytes of its keys and values)
        self.max_keys, self.max_bytes = MAX_KEYS_PER_RANK, MAX_BYTES_PER_RANK
        self.closed = None  # why, once closed

    def close(self, reason):
        self.closed = reason
        self.changed.notify_all()

    def put(self, rank, key, value):
        """Stores the value; OverBudget when the rank would hold more than
        its budget (a value replaced is measured against it too)."""
        old = self.values.get((rank, key))
        keys, size = self.held.get(rank, (0, 0))
        if old is None:
            keys, size = keys + 1, size + len(key.encode("utf-8"))
        size += len(value) - (len(old) if old is not None else 0)
        if keys > self.max_keys or size > self.max_bytes:
            raise OverBudget(
                f"rank {rank} would hold {keys} keys and {size} bytes, over "
                f"the limit of {self.max_keys} keys and {self.max_bytes} "
                f"bytes per rank")
        self.held[rank] = (keys, size)
        if old is None:
            self.holders[key] = self.holders.get(key, 0) + 1
        self.values[(rank, key)] = value
        self.changed.notify_all()

    def get(self, owner, key, timeout):
        if owner >= self.size:
            return STATUS_ERROR, pack_str(f"rank {owner} is outside the job "
                                          f"of {self.size} ranks")
        self.changed.wait_for(
            lambda: (owner, key) in self.values or self.closed, timeout)
        if self.closed:
            return STATUS_ERROR, pack_str(self.closed)
        if (owner, key) in self.values:
            return STATUS_OK, pack_blob(self.values[(owner, key)])
        return STATUS_TIMEOUT, struct.pack(">II", 1, owner)

    def allgather(self, rank, key, value, timeout):
        self.put(rank, key, value)
        self.changed.wait_for(
            lambda: self.holders[key] == self.size or self.closed, timeout)
        if self.closed:
            return STATUS_ERROR, pack_str(self.closed)
        if self.holders[key] == self.size:
            return STATUS_OK, struct.pack(">I", self.size) + b"".join(
                pack_blob(self.values[(r, key)]) for r in range(self.size))
        absent = [r for r in range(self.size)
                  if (r, key) not in self.values]
        return STATUS_TIMEOUT, struct.pack(f">I{len(absent)}I", len(absent),
                                           *absent)


class Member:
    """A connection that joined as `rank` of the world `store` holds."""

    def __init__(self, store, rank):
        self.store, self.rank = store, rank


class Session:
    """One connection's protocol state: the nonce of its greeting, the next
    sequence number, and what its opening request made (`member`: a Member
    after a JOIN, None before)."""

    def __init__(self, service, peer, nonce):
        self.service, self.peer, self.nonce = service, peer, nonce
        self.seq, self.member = 0, None
        self.counted = False  # in the service's budget of joined connections

    @property
    def rank(self):
        """The rank this connection joined as, or None."""
        return getattr(self.member, "rank", None)

    def check_length(self, n):
        """Drop unless a frame of `n` bytes can follow the length prefix:
        before the JOIN only a JOIN fits."""
        limit = MAX_FRAME if self.member is not None else MAX_JOIN_FRAME
        if n < MIN_FRAME or n > limit:
            raise Drop(f"frame length {n} outside {MIN_FRAME}..{limit}")

    def handle(self, frame):
        """Serves one frame (tag, then body). Returns the response frame,
        length prefix included, and whether the connection ends after it."""
        return self.dispatch(*self.verify(frame))

    def verify(self, frame):
        """The checks that need no handler: the tag, the sequence number,
        and an op this connection may send now. Returns (seq, op, a Reader
        at the op's fields) for dispatch(); Drop when the frame fails."""
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
        if self.member is None and op not in service.opening_ops:
            raise Drop(f"{OP_NAMES[op]} before JOIN")
        return got_seq, op, reader

    def dispatch(self, seq, op, reader):
        """Serves a verified request: the handler's answer, as handle()."""
        service = self.service
        try:
            status, fields, member = service._handle(op, reader, self.member,
                                                     self.peer)
        except Malformed as e:
            raise Drop(f"malformed {OP_NAMES[op]}: {e}") from None
        if self.member is None and member is not None:
            service._joined_connection(self)
        self.member = member
        reply = struct.pack(">QBB", seq, op | RESPONSE_BIT, status) + fields
        tag = frame_tag(service.secret, SERVER, self.nonce, reply)
        return (struct.pack(">I", TAG_BYTES + len(reply)) + tag + reply,
                status == STATUS_ERROR)


class Rendezvous:
    """The store of one job of `size` ranks, listening on `address`.
    Subclasses serve more operations (`handlers`, `opening_ops`)."""

    opening_ops = (OP_JOIN,)  # what a connection may start with
    session_kind = {OP_PUT: Member, OP_GET: Member, OP_ALLGATHER: Member}

    def __init__(self, address, size, secret, job_id):
        self.size, self.secret, self.job_id = size, secret, job_id
        self.changed = threading.Condition()
        self.world = Store(size, self.changed)
        self.joined = {}  # rank -> host name given in its first JOIN
        # Connections that have joined, and those that have not yet (in the
        # order they came, socket -> rendezvous_door.Opening): separate
        # budgets, so strangers never take a rank's place.
        self.connections = 0
        self.max_connections = 4 * size + 64
        self.unjoined = collections.OrderedDict()
        self.max_wait_s = MAX_WAIT_S
        self.join_window_s = JOIN_WINDOW_S
        self.stranger_log = StrangerLog()
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self.listener.bind((address, 0))
        except OSError as e:
            raise Fatal(f"cannot bind the rendezvous service to {address}: "
                        f"{e.strerror}") from None
        # A flood outpaces the accept loop in bursts; past the backlog the
        # kernel drops SYNs, which stalls each client it drops, a rank too,
        # for a second. The kernel caps it at net.core.somaxconn.
        self.listener.listen(4096)
        self.address, self.port = self.listener.getsockname()[:2]

    def start(self):
        threading.Thread(target=Door(self).run, name="rendezvous",
                         daemon=True).start()

    def joined_ranks(self):
        with self.changed:
            return set(self.joined)

    def open_session(self, peer):
        """A new connection's Session, with the nonce of its greeting."""
        return Session(self, peer, secrets.token_bytes(NONCE_BYTES))

    def hand_over(self, conn, session, request, deadline):
        """Gives a connection whose first frame verified (Session.verify's
        `request`) a serving thread of its own."""
        threading.Thread(target=self._serve,
                         args=(conn, session, request, deadline),
                         daemon=True).start()

    def _joined_connection(self, session):
        """A connection's first valid JOIN: it moves to the ranks' budget, or
        is refused when that is full."""
        with self.changed:
            full = self.connections >= self.max_connections
            if not full:
                self.connections += 1
                session.counted = True
        if full:
            raise Drop(f"{self.max_connections} connections of ranks open")

    def _serve(self, conn, session, request, deadline):
        peer = session.peer
        try:
            conn.setblocking(True)
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._serve_frames(conn, session, request, deadline)
        except Drop as e:
            message = f"rendezvous: dropped message from {peer}: {e}"
            if session.member is None:
                self.stranger_log(message)
            else:
                log(message)
        except socket.timeout:
            self.stranger_log(
                f"rendezvous: closed connection from {peer}: no valid JOIN "
                f"within {self.join_window_s:g} s")
        except OSError:
            pass  # the peer went away
        except Exception as e:  # never let one connection stop the service
            log(f"rendezvous: internal error serving {peer}: {e!r}")
        finally:
            conn.close()
            if session.counted:
                with self.changed:
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

    def _serve_frames(self, conn, session, request, deadline):
        """Answers `request`, then every next request; `deadline` holds
        until the connection has joined."""
        while True:
            response, last = session.dispatch(*request)
            if session.member is not None:
                deadline = None
            conn.settimeout(None)
            conn.sendall(response)
            if last:
                return
            head = self._recv_exact(conn, 4, deadline, at_boundary=True)
            if head is None:
                return
            n = struct.unpack(">I", head)[0]
            session.check_length(n)
            request = session.verify(self._recv_exact(conn, n, deadline))

    def handlers(self):
        return {OP_JOIN: self._join, OP_PUT: self._put, OP_GET: self._get,
                OP_ALLGATHER: self._allgather}

    def _handle(self, op, reader, session, peer):
        """Returns (status, response fields, the connection's session)."""
        handler = self.handlers().get(op)
        if handler is None:
            raise Drop(f"{OP_NAMES[op]} is not served by this job")
        kind = self.session_kind.get(op)
        if kind is not None and not isinstance(session, kind):
            raise Drop(f"{OP_NAMES[op]} on a connection that did not JOIN")
        return handler(reader, session, peer)

    @staticmethod
    def read_join(reader):
        """JOIN's fields: (rank, size, job id, host, world epoch)."""
        r, size = reader.u32(), reader.u32()
        job_id = reader.str(MAX_KEY_BYTES)
        host = reader.str(MAX_KEY_BYTES)
        epoch = 0 if reader.at_end() else reader.u64()
        reader.end()
        return r, size, job_id, host, epoch

    def _join(self, reader, session, peer):
        r, size, job_id, host, epoch = self.read_join(reader)
        if size != self.size or job_id != self.job_id or r >= size or epoch:
            message = (f"JOIN as rank {r} of {size} in job {job_id!r}"
                       f"{f' at epoch {epoch}' if epoch else ''}, but this is "
                       f"job {self.job_id!r} of {self.size} ranks")
            log(f"rendezvous: refused {peer}: {message}")
            return STATUS_ERROR, pack_str(message), session
        with self.changed:
            first = r not in self.joined
            self.joined.setdefault(r, host)
            self.changed.notify_all()
        if first:
            vlog(f"rank {r} reached the rendezvous from {host} ({peer})")
        return STATUS_OK, b"", Member(self.world, r)

    @staticmethod
    def _put(reader, member, peer):
        key = reader.str(MAX_KEY_BYTES)
        value = reader.blob(MAX_VALUE_BYTES)
        reader.end()
        try:
            with member.store.changed:
                member.store.put(member.rank, key, value)
        except OverBudget as e:
            return Rendezvous._refused("PUT", key, e, member, peer)
        return STATUS_OK, b"", member

    @staticmethod
    def _refused(op, key, why, member, peer):
        """An ERROR answer to a rank's request, logged."""
        message = f"{op} of key {key!r} refused: {why}"
        log(f"rendezvous: rank {member.rank} ({peer}): {message}")
        return STATUS_ERROR, pack_str(message), member

    def _get(self, reader, member, peer):
        owner = reader.u32()
        key = reader.str(MAX_KEY_BYTES)
        timeout = min(reader.u32() / 1000.0, self.max_wait_s)
        reader.end()
        with member.store.changed:
            status, fields = member.store.get(owner, key, timeout)
        return status, fields, member

    def _allgather(self, reader, member, peer):
        key = reader.str(MAX_KEY_BYTES)
        value = reader.blob(MAX_VALUE_BYTES)
        timeout = min(reader.u32() / 1000.0, self.max_wait_s)
        reader.end()
        try:
            with member.store.changed:
                status, fields = member.store.allgather(member.rank, key,
                                                        value, timeout)
        except OverBudget as e:
            return self._refused("ALLGATHER", key, e, member, peer)
        return status, fields, member
