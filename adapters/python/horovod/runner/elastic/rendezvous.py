"""The rendezvous service of an elastic job: one store per world (a round,
numbered by its epoch), and the workers' requests for their place in the
next world and for news of membership changes (tools/horovodrun/
PROTOCOL.md, "Elastic jobs").

A worker is known by (host, slot). Each published round assigns every
member its rank; only the newest round's store is open: publishing the next
one closes the earlier, which answers whoever still waits in it with an
error, so nothing of an old world is matched by a new one."""

import struct
import time

from horovod.runner.log import log, vlog
from horovod.runner.protocol import (
    MAX_KEY_BYTES, OP_ASSIGN, OP_JOIN, OP_UPDATES, OP_WORKER, STATUS_ERROR,
    STATUS_OK, STATUS_TIMEOUT, pack_str)
from horovod.runner.rendezvous import Member, Rendezvous, Store


class Worker:
    """A connection that said which worker it is."""

    def __init__(self, host, slot):
        self.host, self.slot = host, slot

    @property
    def key(self):
        return (self.host, self.slot)


class Round:
    def __init__(self, epoch, placements, update_seq, changed):
        self.epoch = epoch
        self.placements = placements  # (host, slot) -> Placement
        self.update_seq = update_seq  # membership news it accounts for
        self.store = Store(len(placements), changed)
        self.joined = set()  # ranks that reached the world's store
        self.left = {}  # (host, slot) -> when it asked for the next world

    def members_absent(self):
        """The members that have not reached the world's store."""
        return [k for k, p in self.placements.items()
                if p.rank not in self.joined]


class ElasticRendezvous(Rendezvous):
    opening_ops = (OP_JOIN, OP_WORKER)
    session_kind = {**Rendezvous.session_kind, OP_ASSIGN: Worker,
                    OP_UPDATES: Worker}

    def __init__(self, address, secret, job_id):
        super().__init__(address, 0, secret, job_id)
        self.max_connections = 1024
        self.round = None
        self.update_seq = 0
        self.update_bits = {}  # seq -> ADDED/REMOVED bits
        self.retired = {}  # (host, slot) -> why it has no place any more
        self.ending = None  # why the job ends, once it does

    def handlers(self):
        return {**super().handlers(), OP_WORKER: self._worker,
                OP_ASSIGN: self._assign, OP_UPDATES: self._updates}

    # ---- the driver's side ------------------------------------------------

    def publish(self, placements):
        """Opens the next world: {(host, slot): Placement}; returns its
        epoch. The previous world's store closes."""
        with self.changed:
            epoch = self.round.epoch + 1 if self.round else 1
            if self.round:
                self.round.store.close(
                    f"world epoch {self.round.epoch} was superseded by "
                    f"epoch {epoch} (membership changed)")
            self.round = Round(epoch, dict(placements), self.update_seq,
                               self.changed)
            self.changed.notify_all()
        vlog(f"elastic: world epoch {epoch} of {len(placements)} ranks")
        return epoch

    def note_update(self, bits):
        """Membership news for the running workers (at their next commit)."""
        with self.changed:
            self.update_seq += 1
            self.update_bits[self.update_seq] = bits
            self.changed.notify_all()

    def broken_since(self):
        """When a member first asked to leave the newest world (its world
        broke: a collective failed), or None."""
        with self.changed:
            left = self.round.left.values() if self.round else ()
            return min(left, default=None)

    def absent_members(self):
        with self.changed:
            return self.round.members_absent() if self.round else []

    def retire(self, key, why):
        with self.changed:
            self.retired[key] = why
            self.changed.notify_all()

    def end(self, why):
        with self.changed:
            self.ending = why
            if self.round:
                self.round.store.close(why)
            self.changed.notify_all()

    # ---- the workers' side ------------------------------------------------

    def _join(self, reader, session, peer):
        r, size, job_id, host, epoch = self.read_join(reader)
        with self.changed:
            current = self.round
            if job_id != self.job_id:
                message = f"JOIN in job {job_id!r}, but this is job " \
                          f"{self.job_id!r}"
            elif current is None or epoch != current.epoch:
                message = (f"JOIN at world epoch {epoch}, but the job is at "
                           f"epoch {current.epoch if current else 0}")
            elif size != current.store.size or r >= size:
                message = (f"JOIN as rank {r} of {size}, but world epoch "
                           f"{epoch} has {current.store.size} ranks")
            else:
                current.joined.add(r)
                return STATUS_OK, b"", Member(current.store, r)
        log(f"rendezvous: refused {peer}: {message}")
        return STATUS_ERROR, pack_str(message), session

    def _worker(self, reader, session, peer):
        job_id = reader.str(MAX_KEY_BYTES)
        host = reader.str(MAX_KEY_BYTES)
        slot = reader.u32()
        reader.end()
        if job_id != self.job_id:
            message = f"WORKER in job {job_id!r}, but this is job " \
                      f"{self.job_id!r}"
            log(f"rendezvous: refused {peer}: {message}")
            return STATUS_ERROR, pack_str(message), session
        return STATUS_OK, b"", Worker(host, slot)

    def _assign(self, reader, worker, peer):
        after = reader.u64()
        timeout = reader.u32() / 1000.0
        reader.end()

        def decided():
            return (self.ending or worker.key in self.retired or
                    (self.round and self.round.epoch > after and
                     worker.key in self.round.placements))

        with self.changed:
            r = self.round
            if r and r.epoch == after and worker.key in r.placements:
                r.left.setdefault(worker.key, time.monotonic())
            self.changed.wait_for(decided, timeout)
            if self.ending:
                return STATUS_ERROR, pack_str(self.ending), worker
            if worker.key in self.retired:
                return STATUS_ERROR, pack_str(self.retired[worker.key]), worker
            if not decided():
                return STATUS_TIMEOUT, struct.pack(">I", 0), worker
            r = self.round
            p = r.placements[worker.key]
            fields = struct.pack(">QQ6I", r.epoch, r.update_seq, p.rank,
                                 r.store.size, p.local_rank, p.local_size,
                                 p.cross_rank, p.cross_size)
        return STATUS_OK, fields, worker

    def _updates(self, reader, worker, peer):
        since = reader.u64()
        reader.end()
        with self.changed:
            bits = 0
            for seq in range(since + 1, self.update_seq + 1):
                bits |= self.update_bits.get(seq, 0)
            return (STATUS_OK, struct.pack(">QB", self.update_seq, bits),
                    worker)
