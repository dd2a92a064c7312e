"""The rendezvous service's door: the one thread that accepts connections
and serves each one's opening itself, without blocking, in a selectors loop:
the greeting, then the first frame, read and verified. A stranger costs it a
few system calls and no thread; only a connection whose first frame verifies
(it knows the job's secret) is handed to a serving thread of its own
(Rendezvous.hand_over)."""

import selectors
import struct
import time

from horovod.runner.log import log
from horovod.runner.protocol import Drop, MAGIC, MAX_UNJOINED

# Connections accepted per wake-up at most, so that those already open are
# read between bursts of new ones.
ACCEPT_BATCH = 64


class Opening:
    """A connection before its first frame is whole: its session, when its
    JOIN window ends, and the bytes of the frame that have arrived."""

    __slots__ = ("conn", "session", "deadline", "head", "body", "length",
                 "watched")

    def __init__(self, conn, session, deadline):
        self.conn, self.session, self.deadline = conn, session, deadline
        self.head, self.body, self.length = b"", b"", None
        self.watched = False  # registered with the door's selector

    def read(self):
        """Reads what has arrived, no more than the first frame. Returns the
        frame once whole, None while more is to come; EOFError when the peer
        closed before sending anything, Drop for a frame cut short or of a
        length refused (Session.check_length)."""
        while True:
            if self.length is None:
                want = 4 - len(self.head)
            else:
                want = self.length - len(self.body)
            try:
                chunk = self.conn.recv(want)
            except BlockingIOError:
                return None
            if not chunk:
                if self.length is None and not self.head:
                    raise EOFError()
                got, n = ((len(self.head), 4) if self.length is None
                          else (len(self.body), self.length))
                raise Drop(f"connection closed inside a frame "
                           f"({got} of {n} bytes)")
            if self.length is None:
                self.head += chunk
                if len(self.head) == 4:
                    self.length = struct.unpack(">I", self.head)[0]
                    self.session.check_length(self.length)
            else:
                self.body += chunk
                if len(self.body) == self.length:
                    return self.body


class Door:
    """Runs the accept loop of `service` (a Rendezvous): its listener, its
    budget of connections without a JOIN (`service.unjoined`, socket ->
    Opening, oldest first) and its rate-limited lines about them."""

    def __init__(self, service):
        self.service = service
        self.selector = selectors.DefaultSelector()

    def run(self):
        listener = self.service.listener
        try:
            listener.setblocking(False)
            self.selector.register(listener, selectors.EVENT_READ)
        except (OSError, ValueError):
            return  # closed before its door opened
        while True:
            for key, _ in self.selector.select(self._until_next_deadline()):
                if key.data is not None:
                    self._advance(key.data)
                elif not self._accept(listener):
                    return
            self._close_expired()

    def _until_next_deadline(self):
        """Seconds until the oldest stranger's JOIN window ends, or None."""
        oldest = next(iter(self.service.unjoined.values()), None)
        if oldest is None:
            return None
        return max(0.0, oldest.deadline - time.monotonic())

    def _accept(self, listener):
        """Accepts what waits, up to a batch; False once the listener is
        closed."""
        for _ in range(ACCEPT_BATCH):
            try:
                conn, peer = listener.accept()
            except (BlockingIOError, InterruptedError):
                return True
            except ConnectionAbortedError:
                continue  # gone before its accept
            except OSError as e:
                if listener.fileno() < 0:
                    return False
                # Out of descriptors: a pause rather than a spin on a
                # listener still readable, until strangers' windows end.
                self.service.stranger_log(
                    f"rendezvous: cannot accept a connection: {e}")
                time.sleep(0.01)
                return True
            self._greet(conn, f"{peer[0]}:{peer[1]}")
        return True

    def _greet(self, conn, peer):
        session = self.service.open_session(peer)
        try:
            conn.setblocking(False)
            # 20 bytes into an empty send buffer: short only when the peer
            # is already gone.
            if conn.send(MAGIC + session.nonce) != len(MAGIC) + len(
                    session.nonce):
                raise ConnectionError()
        except OSError:
            conn.close()
            return
        service = self.service
        opening = Opening(conn, session,
                          time.monotonic() + service.join_window_s)
        with service.changed:
            evicted = None
            if len(service.unjoined) >= MAX_UNJOINED:
                evicted = service.unjoined.popitem(last=False)[1]
            service.unjoined[conn] = opening
        if evicted is not None:
            self._close(evicted)
            service.stranger_log(
                f"rendezvous: closed connection from {evicted.session.peer}: "
                f"no valid JOIN before {MAX_UNJOINED} newer connections")
        # Most peers send their first frame at once: it is often here
        # already, read without a trip through the selector.
        self._advance(opening)

    def _advance(self, opening):
        """Reads what `opening` has; hands it over once its first frame
        verifies, closes it when it fails."""
        session = opening.session
        try:
            frame = opening.read()
            if frame is None:
                if not opening.watched:
                    self.selector.register(opening.conn,
                                           selectors.EVENT_READ, opening)
                    opening.watched = True
                return
            request = session.verify(frame)
        except Drop as e:
            self.service.stranger_log(
                f"rendezvous: dropped message from {session.peer}: {e}")
        except (EOFError, OSError):
            pass  # the peer went away
        except Exception as e:  # never let one connection stop the service
            log(f"rendezvous: internal error serving {session.peer}: {e!r}")
        else:
            self._forget(opening)
            try:
                self.service.hand_over(opening.conn, session, request,
                                       opening.deadline)
            except RuntimeError as e:  # no thread to be had
                log(f"rendezvous: cannot serve {session.peer}: {e}")
                opening.conn.close()
            return
        self._close(opening)

    def _close_expired(self):
        now = time.monotonic()
        while True:
            oldest = next(iter(self.service.unjoined.values()), None)
            if oldest is None or oldest.deadline > now:
                return
            self._close(oldest)
            self.service.stranger_log(
                f"rendezvous: closed connection from {oldest.session.peer}: "
                f"no valid JOIN within {self.service.join_window_s:g} s")

    def _forget(self, opening):
        """Takes `opening` off the door's books: selector and budget."""
        if opening.watched:
            self.selector.unregister(opening.conn)
            opening.watched = False
        with self.service.changed:
            self.service.unjoined.pop(opening.conn, None)

    def _close(self, opening):
        self._forget(opening)
        opening.conn.close()
