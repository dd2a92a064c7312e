"""Elastic training's worker side, as in Horovod: a State that commits,
restores and syncs, and run(), which retries the training function in each
new world.

A failed collective raises HorovodInternalError: the state goes back to
its last commit and the worker moves to the next world (hvd.shutdown(),
hvd.init(): the process survives). A membership change raises
HostsUpdatedInterrupt at a commit on every rank at once: the state is
current, no restore. In the new world the state is broadcast from the
lowest rank among those holding the newest commit, so new workers and
survivors that missed the last commit continue from it."""

import copy
import functools
import os

from horovod.common.exceptions import (HorovodInternalError,
                                       HostsUpdatedInterrupt)

REMOVED_ONLY = 2  # the launcher's news bits: hosts were only removed


def _membership_news():
    """(news number, bits) from the launcher, or None outside an elastic
    job."""
    if os.environ.get("HOROVOD_ELASTIC") != "1":
        return None
    from horovod.runner.elastic import worker
    return worker.link().membership_news()


def _news_seen():
    from horovod.runner.elastic import worker
    world = worker.current_world()
    return world.update_seq if world else 0


class State:
    """What a worker keeps across worlds. Subclasses save(), restore() and
    sync() their objects."""

    def __init__(self, bcast_object, get_rank):
        self._bcast_object = bcast_object
        self._rank = get_rank
        self._allgather_object = None  # set by bindings that have one
        self._reset_callbacks = []
        self.commits = 0  # commits made; new workers start at 0

    def register_reset_callbacks(self, callbacks):
        """Functions called after each move to a new world."""
        self._reset_callbacks.extend(callbacks)

    def on_reset(self):
        self.reset()
        for callback in self._reset_callbacks:
            callback()

    def on_hosts_updated(self, timestamp, update_res):
        """Kept for Horovod's API: news is fetched at each commit."""

    def commit(self):
        """Saves the state, then raises HostsUpdatedInterrupt on every rank
        when the membership changed."""
        self.save()
        self.commits += 1
        self.check_host_updates()

    def check_host_updates(self):
        news = _membership_news()
        seen = _news_seen() if news is not None else 0
        # Every rank takes rank 0's view, so all raise together.
        seq, bits = self._bcast_object(news or (0, 0))
        if seq > seen:
            raise HostsUpdatedInterrupt(bits == REMOVED_ONLY)

    def sync_root(self):
        """The lowest rank holding the newest commit (rank 0 where the
        binding has no allgather)."""
        if self._allgather_object is None:
            return 0
        commits = self._allgather_object(self.commits)
        return commits.index(max(commits))

    def sync(self):
        root = self.sync_root()
        self.commits = self._bcast_object(self.commits, root_rank=root)
        self.sync_from(root)
        self.save()

    def sync_from(self, root):
        raise NotImplementedError()

    def save(self):
        raise NotImplementedError()

    def restore(self):
        raise NotImplementedError()

    def reset(self):
        """Adapts the state to a new world (after the move, before the
        callbacks)."""


class ObjectState(State):
    """Picklable attributes given as keyword arguments."""

    def __init__(self, bcast_object, get_rank, **kwargs):
        self._saved_state = kwargs
        self._set_attrs()
        super().__init__(bcast_object=bcast_object, get_rank=get_rank)

    def save(self):
        self._saved_state = {k: copy.deepcopy(getattr(self, k))
                             for k in self._saved_state}

    def restore(self):
        self._set_attrs()

    def sync_from(self, root):
        if self._saved_state:
            self._saved_state = self._bcast_object(self._saved_state,
                                                   root_rank=root)
            self._set_attrs()

    def _set_attrs(self):
        for k, v in self._saved_state.items():
            setattr(self, k, copy.deepcopy(v))


def run_fn(func, reset):
    """func(state, ...) run to its end across worlds; reset() moves this
    worker to the next world."""
    @functools.wraps(func)
    def wrapper(state, *args, **kwargs):
        skip_sync = False
        while True:
            try:
                if not skip_sync:
                    state.sync()
                return func(state, *args, **kwargs)
            except HorovodInternalError:
                state.restore()
                skip_sync = False
            except HostsUpdatedInterrupt as e:
                skip_sync = e.skip_sync
            reset()
            state.on_reset()
    return wrapper
