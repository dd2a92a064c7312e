"""horovod.torch's handles: Horovod's are ints, each naming an op in flight
(its _native.Handle, what must stay alive until it ends, and how its result
is made), for poll() and synchronize()."""

import itertools

# handle -> _Pending. next() on the counter is atomic under the GIL.
_handle_map = {}
_handle_counter = itertools.count(1)


class _Pending:
    """An op in flight: the core's handle, what must stay alive until it
    ends, and how its result is made once it succeeded (finish None: the
    result is `keep`, an in-place tensor)."""

    __slots__ = ("core", "keep", "finish")

    def __init__(self, core, keep, finish):
        self.core = core
        self.keep = keep
        self.finish = finish


def register(core, keep, finish):
    """A Horovod handle for the op behind `core`."""
    handle = next(_handle_counter)
    _handle_map[handle] = _Pending(core, keep, finish)
    return handle


def poll(handle):
    """Whether the op behind `handle` has finished; synchronize() then
    returns at once."""
    pending = _handle_map.get(handle)
    if pending is None:
        raise ValueError(f"{handle} is not a handle of an op in flight")
    return pending.core.poll()


def synchronize(handle):
    """Waits for the op behind `handle` and returns its result (the output
    tensor; for alltoall the output and the received splits)."""
    pending = _handle_map.pop(handle, None)
    if pending is None:
        return handle() if callable(handle) else None  # sparse: a function
    pending.core.wait()
    if pending.finish is None:  # an in-place result
        pending.core.release()
        return pending.keep
    return pending.finish(pending.core)


def released(result_fn):
    """finish() for ops whose outputs the caller provided."""

    def finish(core):
        core.release()
        return result_fn()

    return finish
