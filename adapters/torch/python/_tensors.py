"""torch tensors to the core's tensor descriptors (zero copy), and the
core's allocated outputs back to torch through DLPack (zero copy): the
output keeps the core's handle alive until torch frees the tensor."""

import ctypes
import threading

import torch
import torch.utils.dlpack

from horovod.common import _capi

_DL = {
    torch.uint8: (_capi.DL_UINT, 8),
    torch.int8: (_capi.DL_INT, 8),
    torch.int16: (_capi.DL_INT, 16),
    torch.int32: (_capi.DL_INT, 32),
    torch.int64: (_capi.DL_INT, 64),
    torch.float16: (_capi.DL_FLOAT, 16),
    torch.bfloat16: (_capi.DL_BFLOAT, 16),
    torch.float32: (_capi.DL_FLOAT, 32),
    torch.float64: (_capi.DL_FLOAT, 64),
    torch.bool: (_capi.DL_BOOL, 8),
}
if hasattr(torch, "uint16"):
    _DL[torch.uint16] = (_capi.DL_UINT, 16)


def check_dtype(tensor):
    if tensor.dtype not in _DL:
        raise ValueError(f"Tensor type {tensor.dtype} is not supported.")


_accepts = {}


def core_accepts(device):
    """Whether the core takes tensors on torch `device` as they are (CUDA:
    a core with hvd_accepts_memory that finds the device usable); else the
    binding stages them through host memory itself."""
    if device.type == "cpu":
        return True
    if device.type != "cuda":
        return False
    index = device.index if device.index is not None else \
        torch.cuda.current_device()
    if index not in _accepts:
        fn = getattr(_capi.lib, "hvd_accepts_memory", None)
        if fn is not None:
            fn.restype = ctypes.c_int32
            fn.argtypes = [ctypes.c_int32, ctypes.c_int32]
        _accepts[index] = fn is not None and fn(_capi.MEM_CUDA, index) == 1
    return _accepts[index]


def describe(tensor):
    """The description horovod.common._native takes of a contiguous tensor
    in host or CUDA memory: (data pointer, (dtype code, bits), shape,
    device: -1 for host memory, else the CUDA device)."""
    return (tensor.data_ptr() or None, _DL[tensor.dtype], tensor.shape,
            tensor.device.index if tensor.is_cuda else -1)


# ---- DLPack -----------------------------------------------------------------

class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice),
                ("ndim", ctypes.c_int32), ("dtype", _DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class _DLManagedTensor(ctypes.Structure):
    pass


_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(_DLManagedTensor))
_DLManagedTensor._fields_ = [("dl_tensor", _DLTensor),
                             ("manager_ctx", ctypes.c_void_p),
                             ("deleter", _DELETER)]

_CAPSULE_NAME = b"dltensor"
_PyCapsule_New = ctypes.pythonapi.PyCapsule_New
_PyCapsule_New.restype = ctypes.py_object
_PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]

_KDL_CPU = 1

# address of a live DLManagedTensor -> (it, its shape and strides, owner)
_live = {}
_live_lock = threading.Lock()


class HandleOwner:
    """Holds a finished core handle until the last tensor made from its
    outputs is freed."""

    def __init__(self, handle):
        self._handle = handle
        self._refs = 1  # the caller's, dropped by done()
        self._lock = threading.Lock()

    def ref(self):
        with self._lock:
            self._refs += 1

    def unref(self):
        with self._lock:
            self._refs -= 1
            last = self._refs == 0
        if last and self._handle:
            self._handle.release()
            self._handle = None

    done = unref


def _delete(managed_ptr):
    # Called by torch (any thread, GIL taken by ctypes) when the tensor's
    # storage goes; possibly late in interpreter teardown.
    try:
        key = ctypes.cast(managed_ptr, ctypes.c_void_p).value
        with _live_lock:
            entry = _live.pop(key, None)
        if entry is not None:
            entry[-1].unref()
    except Exception:  # noqa: BLE001 - nothing may escape into torch
        pass


_deleter = _DELETER(_delete)


def from_core(out, dtype, owner):
    """A torch tensor over the core-allocated output `out` ((data pointer,
    shape, byte offset), from Handle.output()) of the handle `owner` holds,
    without copying."""
    data, shape, byte_offset = out
    numel = 1
    for n in shape:
        numel *= n
    if numel == 0 or not data:
        return torch.empty(shape, dtype=dtype)
    # bool travels as bytes: older torch releases read no DLPack bool.
    wire = torch.uint8 if dtype == torch.bool else dtype
    code, bits = _DL[wire]
    managed = _DLManagedTensor()
    t = managed.dl_tensor
    t.data = data
    t.device.device_type = _KDL_CPU
    t.device.device_id = 0
    t.ndim = len(shape)
    t.dtype.code, t.dtype.bits, t.dtype.lanes = code, bits, 1
    dims = (ctypes.c_int64 * max(1, len(shape)))(*shape)
    strides = (ctypes.c_int64 * max(1, len(shape)))()
    step = 1
    for i in reversed(range(len(shape))):
        strides[i] = step
        step *= shape[i]
    t.shape = dims
    t.strides = strides
    t.byte_offset = byte_offset
    managed.deleter = _deleter
    key = ctypes.addressof(managed)
    owner.ref()
    with _live_lock:
        _live[key] = (managed, dims, strides, owner)
    try:
        capsule = _PyCapsule_New(key, _CAPSULE_NAME, None)
        tensor = torch.utils.dlpack.from_dlpack(capsule)
    except BaseException:
        _delete(ctypes.cast(key, ctypes.POINTER(_DLManagedTensor)))
        raise
    return tensor.view(torch.bool) if dtype == torch.bool else tensor
