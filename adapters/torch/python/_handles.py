"""horovod.torch's handles: Horovod's are ints, each naming an op in flight
for poll() and synchronize()."""

import itertools

# handle -> (core, keep, finish): the op's _native.Handle, what must stay
# alive until it ends, and how its result is made once it succeeded (finish
# None: the result is `keep`, an in-place tensor). A tuple: the per-op cost
# of an object would show in a step of many small tensors. next() on the
# counter is atomic under the GIL.
_handle_map = {}
_handle_counter = itertools.count(1)


def register(core, keep, finish):
    """A Horovod handle for the op behind `core`."""
    handle = next(_handle_counter)
    _handle_map[handle] = (core, keep, finish)
    return handle


def core_of(handle):
    """The _native.Handle of an op in flight."""
    return _handle_map[handle][0]


def poll(handle):
    """Whether the op behind `handle` has finished; synchronize() then
    returns at once."""
    pending = _handle_map.get(handle)
    if pending is None:
        raise ValueError(f"{handle} is not a handle of an op in flight")
    return pending[0].poll()


def synchronize(handle):
    """Waits for the op behind `handle` and returns its result (the output
    tensor; for alltoall the output and the received splits)."""
    pending = _handle_map.pop(handle, None)
    if pending is None:
        return handle() if callable(handle) else None  # sparse: a function
    core, keep, finish = pending
    core.wait()
    if finish is None:  # an in-place result
        core.release()
        return keep
    return finish(core)


def released(result_fn):
    """finish() for ops whose outputs the caller provided."""

    def finish(core):
        core.release()
        return result_fn()

    return finish
