"""One collective through the core's C API, for the bindings that hand it
tensors through ctypes (horovod.torch, horovod.mxnet): naming, the process
set check, hvd_enqueue, waiting, and reading what the core allocated.

Each binding brings `describe(tensor, slot, keep)`, which fills a core
tensor descriptor for one of its tensors and appends to `keep` what must
live until hvd_enqueue returns.
"""

import ctypes

from horovod.common import _capi
from horovod.common import basics as _basics
from horovod.common import process_sets as _process_sets
from horovod.common.exceptions import HorovodInternalError

_OP_SIZE = ctypes.sizeof(_capi.Op)


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
            splits=None):
    """Starts one op on the core; returns its hvd_handle (c_void_p)."""
    keep = []
    o = _capi.Op()
    o.struct_size = _OP_SIZE
    o.collective = collective
    o.name = name.encode() if name else None
    o.process_set = set_id(process_set or _process_sets.global_process_set)
    o.tensor_count = len(inputs)
    if inputs:
        ins = (_capi.Tensor * len(inputs))()
        for t, slot in zip(inputs, ins):
            describe(t, slot, keep)
        o.inputs = ins
    if outputs is not None:
        outs = (_capi.Tensor * len(outputs))()
        for t, slot in zip(outputs, outs):
            describe(t, slot, keep)
        o.outputs = outs
    if op is not None:
        o.op = _basics.core_op(op)
    o.prescale = float(prescale)
    o.postscale = float(postscale)
    o.root = int(root)
    if splits is not None:
        arr = (ctypes.c_int32 * len(splits))(*splits)
        keep.append(arr)
        o.splits = arr
        o.split_count = len(splits)
    core = ctypes.c_void_p()
    status = _capi.lib.hvd_enqueue(ctypes.byref(o), ctypes.byref(core))
    if status != _capi.OK:
        _basics.raise_for_status(status, name)
    return core


def wait(core, error=HorovodInternalError):
    """Waits for the core handle (GIL released; Ctrl-C is seen every
    second); when the op failed, releases it and raises `error` with the
    core's message."""
    done = ctypes.c_int32(0)
    while True:
        status = _capi.lib.hvd_wait(core, 1000)
        if status != _capi.ERR_TIMEOUT:
            break
        _capi.lib.hvd_poll(core, ctypes.byref(done))
        if done.value:
            break
    if status != _capi.OK:
        message = (_capi.lib.hvd_handle_message(core) or b"").decode(
            "utf-8", "replace") or _capi.status_name(status)
        _capi.lib.hvd_release(core)
        raise error(message)


def output(core, index):
    """The descriptor of output `index` the core allocated for a finished
    op (allgather, alltoall, join)."""
    desc = _capi.Tensor()
    status = _capi.lib.hvd_handle_output(core, index, ctypes.byref(desc))
    if status != _capi.OK:
        _basics.raise_for_status(status, "output")
    return desc


def received_splits(core):
    """alltoall: the rows received from each rank."""
    count = ctypes.c_int32(0)
    data = ctypes.POINTER(ctypes.c_int32)()
    status = _capi.lib.hvd_handle_received_splits(core, ctypes.byref(data),
                                                  ctypes.byref(count))
    return list(data[:count.value]) if status == _capi.OK else []


def join_result(core):
    """join: the last rank to join (releases the finished handle)."""
    try:
        desc = output(core, 0)
        return ctypes.cast(desc.data, ctypes.POINTER(ctypes.c_int32))[0]
    finally:
        _capi.lib.hvd_release(core)
