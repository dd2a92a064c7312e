"""MXNet NDArrays to the descriptions horovod.common._native takes and
back, through DLPack, without copying.

MXNet runs operators asynchronously on its engine; the core reads and
writes an array's memory behind the engine's back. So the core gets an
array only through its DLPack export, which first waits on the engine:
to_dlpack_for_read() until every pending write of the array is done (an
input), to_dlpack_for_write() until every pending read and write is done
(an array the core writes: in-place ops, outputs). The ops that use this
return only once the core has finished (see mpi_ops), so nothing MXNet
queues later can see an array before the core has written it.
"""

import mxnet as mx
import numpy as np

from horovod.common import _capi
from horovod.common import dlpack as _dlpack

# MXNet's CPU dtypes. MXNet exports bool as DLPack uint1; the core's bool
# is one byte, as MXNet stores it.
_DL = {
    np.dtype(np.float16): (_capi.DL_FLOAT, 16),
    np.dtype(np.float32): (_capi.DL_FLOAT, 32),
    np.dtype(np.float64): (_capi.DL_FLOAT, 64),
    np.dtype(np.uint8): (_capi.DL_UINT, 8),
    np.dtype(np.int8): (_capi.DL_INT, 8),
    np.dtype(np.int32): (_capi.DL_INT, 32),
    np.dtype(np.int64): (_capi.DL_INT, 64),
    np.dtype(np.bool_): (_capi.DL_BOOL, 8),
}
_MXNET_BOOL = (_capi.DL_UINT, 1)

SUPPORTED_DTYPES = tuple(_DL)


def check(array):
    """Raises ValueError for what the core cannot take."""
    if not isinstance(array, mx.nd.NDArray):
        raise ValueError(f"expected an mxnet.nd.NDArray, got "
                         f"{type(array).__name__}")
    if getattr(array, "stype", "default") != "default":
        raise ValueError(f"sparse arrays ({array.stype}) are not supported; "
                         f"use tostype('default')")
    if np.dtype(array.dtype) not in _DL:
        raise ValueError(f"Tensor type {np.dtype(array.dtype).name} is not "
                         f"supported.")
    if array.context.device_type not in ("cpu", "cpu_pinned", "cpu_shared"):
        raise ValueError(f"horovod.mxnet takes arrays on mx.cpu(); got one on "
                         f"{array.context}")


class Exported:
    """An array's DLPack export, held while the core may touch its memory."""

    __slots__ = ("array", "capsule")

    def __init__(self, array, write):
        check(array)
        self.array = array
        self.capsule = (array.to_dlpack_for_write() if write
                        else array.to_dlpack_for_read())


def readable(arrays):
    """Exports for the core to read (after the engine's pending writes)."""
    return [Exported(a, write=False) for a in arrays]


def writable(arrays):
    """Exports for the core to write (after every pending engine access)."""
    return [Exported(a, write=True) for a in arrays]


def describe(exported):
    """The description horovod.common._native takes of an Exported array:
    (data pointer, (dtype code, bits), shape, -1: host memory). The export
    is contiguous; the caller keeps it alive until the op has finished."""
    dl = _dlpack.read_capsule(exported.capsule)
    dtype = (dl.dtype.code, dl.dtype.bits)
    if dtype == _MXNET_BOOL:
        dtype = (_capi.DL_BOOL, 8)
    shape = tuple(dl.shape[i] for i in range(dl.ndim))
    return ((dl.data or 0) + dl.byte_offset or None, dtype, shape, -1)


def from_core(out, dtype, owner):
    """An NDArray over the core-allocated output `out` ((data pointer,
    shape, byte offset), from Handle.output()) of the handle `owner` holds,
    without copying."""
    data, shape, _ = out
    if not data or 0 in shape:
        # Legacy MXNet arrays cannot have a zero dimension.
        raise ValueError(f"the result has shape {shape}: MXNet arrays "
                         f"cannot be empty")
    dtype = np.dtype(dtype)
    code, bits = _MXNET_BOOL if dtype == np.bool_ else _DL[dtype]
    return _dlpack.export_output(out, code, bits, owner, mx.nd.from_dlpack)
