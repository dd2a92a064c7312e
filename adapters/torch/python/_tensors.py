"""torch tensors go to horovod.common._native as they are (zero copy: it
reads data_ptr(), dtype, shape and get_device() itself, with the dtypes
registered here), and the core's allocated outputs come back to torch
through DLPack (zero copy): the output keeps the core's handle alive until
torch frees the tensor."""

import ctypes

import torch
import torch.utils.dlpack

from horovod.common import _capi
from horovod.common import dlpack as _dlpack

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
_capi.native.set_dtypes(_DL)

def check_dtype(tensor):
    """Raises ValueError unless `tensor` is a torch tensor of a dtype the
    core carries."""
    if not isinstance(tensor, torch.Tensor):
        what = "None" if tensor is None else type(tensor).__name__
        raise ValueError(f"expected a torch.Tensor, got {what}")
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


# ---- outputs the core allocated ---------------------------------------------

HandleOwner = _dlpack.HandleOwner


def from_core(out, dtype, owner):
    """A torch tensor over the core-allocated output `out` ((data pointer,
    shape, byte offset), from Handle.output()) of the handle `owner` holds,
    without copying."""
    data, shape, _ = out
    numel = 1
    for n in shape:
        numel *= n
    if numel == 0 or not data:
        return torch.empty(shape, dtype=dtype)
    # bool travels as bytes: older torch releases read no DLPack bool.
    wire = torch.uint8 if dtype == torch.bool else dtype
    code, bits = _DL[wire]
    tensor = _dlpack.export_output(out, code, bits, owner,
                                   torch.utils.dlpack.from_dlpack)
    return tensor.view(torch.bool) if dtype == torch.bool else tensor
