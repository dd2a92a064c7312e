"""One collective through the core, for the bindings that hand it tensors
in place (horovod.torch, horovod.mxnet): naming, the process set check and
enqueueing through horovod.common._native. The _native.Handle returned
does the rest: wait() (GIL released, interruptible by Ctrl-C; raises
HorovodInternalError and releases the handle when the op failed), poll(), output(i) (what the core
allocated: data pointer, shape, byte offset), received_splits(), release().

Each binding brings `describe(tensor)`, which gives the description the
extension takes of one of its tensors: (data pointer, (dtype code, bits),
shape tuple, device: -1 for host memory, else the CUDA device); or None,
when the extension reads its tensors itself (_native.set_dtypes). The
caller keeps its tensors alive until the op has finished.
"""

import ctypes

from horovod.common import _capi
from horovod.common import basics as _basics
from horovod.common import process_sets as _process_sets


def op_name(kind, name, process_set):
    """The name the ranks match the op by: `kind.name`, or the set's next
    unnamed one."""
    if name:
        return f"{kind}.{name}"
    n = _process_sets.next_unnamed(process_set.process_set_id)
    return f"{kind}.noname.{n}"


def set_id(process_set):
    """The registered id of a set this process belongs to."""
    if not isinstance(process_set, _process_sets.ProcessSet):
        raise ValueError(f"process_set must be a ProcessSet, not "
                         f"{type(process_set).__name__}")
    if process_set.process_set_id is None:
        raise ValueError(f"{process_set} is not registered: pass it to "
                         f"hvd.init(process_sets=...) or add_process_set()")
    if process_set.process_set_id != 0 and not process_set.included():
        raise ValueError(f"this process (rank {_basics.rank()}) is not part "
                         f"of {process_set}")
    return process_set.process_set_id


def enqueue(describe, collective, name, inputs, outputs=None,
            process_set=None, op=None, prescale=1.0, postscale=1.0, root=0,
            splits=None, cache=False, stream=0, given=None):
    """Starts one op on the core; returns its _native.Handle. With `cache`
    (a name that recurs, e.g. a gradient's), the op's descriptor is built
    once and reused while later calls describe the same op. `stream`: the
    hvd_stream (horovod.common.device_layer) the op runs on, 0 for none;
    `given`: allgather's or alltoall's outputs, allocated by the caller with
    the shapes the ranks negotiate, for the core to write into."""
    if describe is not None:
        inputs = [describe(t) for t in inputs]
        outputs = None if outputs is None else [describe(t) for t in outputs]
    return _capi.native.enqueue(
        collective, name, cache,
        set_id(process_set or _process_sets.global_process_set),
        0 if op is None else _basics.core_op(op), float(prescale),
        float(postscale), int(root), inputs, outputs, splits, stream,
        given if given is None or describe is None else
        [describe(t) for t in given])


def join():
    """Waits until every rank has joined (meanwhile the others' allreduces
    run with this rank contributing zeros); returns the last rank to
    join."""
    if not _capi.lib.hvd_is_initialized():
        raise ValueError("Horovod has not been initialized; use hvd.init().")
    core = enqueue(None, _capi.COLL_JOIN, None, [])
    core.wait()
    return _capi.int32_output(core)


def barrier(process_set=None):
    """Returns once every rank of the process set has called barrier()."""
    enqueue(None, _capi.COLL_BARRIER, None, [],
            process_set=process_set).wait()
