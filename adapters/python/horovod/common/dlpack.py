"""DLPack between the core and a framework, without a copy either way.

A framework's array comes in as a DLPack capsule (read_capsule gives its
DLTensor); an output the core allocated goes out as a capsule over the
core's memory (export_output), which keeps the core's handle alive until
the framework frees the last array made from it.
"""

import ctypes
import threading

KDL_CPU = 1


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice),
                ("ndim", ctypes.c_int32), ("dtype", DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    pass


_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [("dl_tensor", DLTensor),
                            ("manager_ctx", ctypes.c_void_p),
                            ("deleter", _DELETER)]

CAPSULE_NAME = b"dltensor"

# Prototypes of our own: frameworks set restype/argtypes on the shared
# ctypes.pythonapi functions for their own use, so those are left alone.
_PyCapsule_New = ctypes.PYFUNCTYPE(
    ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)(
        ("PyCapsule_New", ctypes.pythonapi))
_PyCapsule_GetPointer = ctypes.PYFUNCTYPE(
    ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
        ("PyCapsule_GetPointer", ctypes.pythonapi))


def read_capsule(capsule):
    """The DLTensor inside an unconsumed DLPack capsule (valid while the
    capsule lives)."""
    address = _PyCapsule_GetPointer(capsule, CAPSULE_NAME)
    return DLManagedTensor.from_address(address).dl_tensor


class HandleOwner:
    """Holds a finished core handle (a _native.Handle) until the last array
    made from its outputs is freed."""

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


# address of a live DLManagedTensor -> (it, its shape and strides, owner)
_live = {}
_live_lock = threading.Lock()


def _delete(managed_ptr):
    # Called by the framework (any thread, GIL taken by ctypes) when the
    # array's storage goes; possibly late in interpreter teardown.
    try:
        key = ctypes.cast(managed_ptr, ctypes.c_void_p).value
        with _live_lock:
            entry = _live.pop(key, None)
        if entry is not None:
            entry[-1].unref()
    except Exception:  # noqa: BLE001 - nothing may escape into the framework
        pass


_deleter = _DELETER(_delete)


def export_output(out, code, bits, owner, from_dlpack):
    """from_dlpack(capsule) over the core-allocated host output `out`
    ((data pointer, shape, byte offset), from Handle.output()) of the
    handle `owner` holds, typed (code, bits); the capsule holds a reference
    on `owner` until the framework calls its deleter."""
    data, shape, byte_offset = out
    managed = DLManagedTensor()
    t = managed.dl_tensor
    t.data = data
    t.device.device_type = KDL_CPU
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
        return from_dlpack(_PyCapsule_New(key, CAPSULE_NAME, None))
    except BaseException:
        _delete(ctypes.cast(key, ctypes.POINTER(DLManagedTensor)))
        raise
