"""The rendezvous service: the job's key-value store, served over TCP to the
ranks that authenticate with the job's secret (tools/horovodrun/
PROTOCOL.md). One thread accepts, one thread serves each connection."""

import hmac
import secrets
import socket
import struct
import threading
import time

from horovod.runner.log import Fatal, log, vlog
from horovod.runner.protocol import (
    CLIENT, JOIN_WINDOW_S, MAGIC, MAX_FRAME, MAX_KEY_BYTES, MAX_VALUE_BYTES,
    MIN_FRAME, NONCE_BYTES, OP_ALLGATHER, OP_GET, OP_JOIN, OP_NAMES, OP_PUT,
    RESPONSE_BIT, SERVER, STATUS_ERROR, STATUS_OK, STATUS_TIMEOUT, TAG_BYTES,
    Malformed, Reader, frame_tag, pack_blob, pack_str)


class Drop(Exception):
    """A frame the service refuses: logged, and the connection closed."""


class Rendezvous:
    """The store of one job of `size` ranks, listening on `address`."""

    def __init__(self, address, size, secret, job_id):
        self.size, self.secret, self.job_id = size, secret, job_id
        self.store = {}  # (rank, key) -> bytes
        self.holders = {}  # key -> how many ranks have put it
        self.changed = threading.Condition()
        self.joined = {}  # rank -> host name given in its first JOIN
        self.connections = 0
        self.max_connections = 4 * size + 64
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
                full = self.connections >= self.max_connections
                if not full:
                    self.connections += 1
            if full:
                log(f"rendezvous: refused connection from {peer_name}: "
                    f"{self.max_connections} connections open")
                conn.close()
                continue
            threading.Thread(target=self._serve, args=(conn, peer_name),
                             daemon=True).start()

    def _serve(self, conn, peer):
        try:
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._serve_frames(conn, peer)
        except Drop as e:
            log(f"rendezvous: dropped message from {peer}: {e}")
        except socket.timeout:
            log(f"rendezvous: closed connection from {peer}: no valid JOIN "
                f"within {JOIN_WINDOW_S:g} s")
        except OSError:
            pass  # the peer went away
        except Exception as e:  # never let one connection stop the service
            log(f"rendezvous: internal error serving {peer}: {e!r}")
        finally:
            conn.close()
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

    def _serve_frames(self, conn, peer):
        nonce = secrets.token_bytes(NONCE_BYTES)
        conn.sendall(MAGIC + nonce)
        deadline = time.monotonic() + JOIN_WINDOW_S  # until a valid JOIN
        seq, rank = 0, None
        while True:
            head = self._recv_exact(conn, 4, deadline, at_boundary=True)
            if head is None:
                return
            n = struct.unpack(">I", head)[0]
            if n < MIN_FRAME or n > MAX_FRAME:
                raise Drop(f"frame length {n} outside {MIN_FRAME}..{MAX_FRAME}")
            frame = self._recv_exact(conn, n, deadline)
            tag, body = frame[:TAG_BYTES], frame[TAG_BYTES:]
            if not hmac.compare_digest(
                    tag, frame_tag(self.secret, CLIENT, nonce, body)):
                raise Drop("bad HMAC")
            reader = Reader(body)
            got_seq, op = reader.u64(), reader.u8()
            if got_seq != seq:
                raise Drop(f"sequence number {got_seq}, expected {seq} "
                           f"(a replayed or reordered message)")
            seq += 1
            if op not in OP_NAMES:
                raise Drop(f"unknown op {op}")
            if rank is None and op != OP_JOIN:
                raise Drop(f"{OP_NAMES[op]} before JOIN")
            try:
                status, fields, rank = self._handle(op, reader, rank, peer)
            except Malformed as e:
                raise Drop(f"malformed {OP_NAMES[op]}: {e}") from None
            if rank is not None:
                deadline = None
            reply = struct.pack(">QBB", got_seq, op | RESPONSE_BIT,
                                status) + fields
            tag = frame_tag(self.secret, SERVER, nonce, reply)
            conn.settimeout(None)
            conn.sendall(struct.pack(">I", TAG_BYTES + len(reply)) + tag +
                         reply)
            if status == STATUS_ERROR:
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
        timeout = reader.u32() / 1000.0
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
        timeout = reader.u32() / 1000.0
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
