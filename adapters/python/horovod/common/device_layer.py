"""The core's device layer (hvd_device_layer(), core/include/horovod/
host.h) through ctypes: the streams a binding runs its device ops on.

A stream of a CUDA device is the core's own (non-blocking) stream; a
binding orders it after the framework's work with the framework's means
(torch: ExternalStream over native_handle()). A stream of host device 0 is
the core's fake device: host memory with stream and event semantics, on
which ops take the same device path as CUDA ones, so that path runs
without a GPU. Streams made here live as long as the process.
"""

import ctypes
import threading

from horovod.common import _capi

_c = ctypes


class Device(_c.Structure):
    _fields_ = [("kind", _c.c_int32), ("id", _c.c_int32)]


_STATUS = _c.c_int32
_CTX = _c.c_void_p


class _Api(_c.Structure):
    # The table's fields up to stream_native (since 1.1), in order; the
    # ones not called here are plain pointers.
    _fields_ = [
        ("struct_size", _c.c_size_t),
        ("ext", _c.c_void_p),
        ("ctx", _CTX),
        ("device_count", _c.CFUNCTYPE(_c.c_int32, _CTX, _c.c_int32)),
        ("stream_create", _c.CFUNCTYPE(_STATUS, _CTX, Device,
                                       _c.POINTER(_c.c_void_p))),
        ("stream_destroy", _c.c_void_p),
        ("stream_synchronize", _c.CFUNCTYPE(_STATUS, _CTX, _c.c_void_p)),
        ("stream_wait_event", _c.c_void_p),
        ("event_create", _c.c_void_p),
        ("event_destroy", _c.c_void_p),
        ("event_record", _c.c_void_p),
        ("event_query", _c.c_void_p),
        ("mem_alloc", _c.c_void_p),
        ("mem_free", _c.c_void_p),
        ("memcpy_async", _c.c_void_p),
        ("reduce", _c.c_void_p),
        ("scale", _c.c_void_p),
        ("stream_native", _c.CFUNCTYPE(_c.c_void_p, _CTX, _c.c_void_p)),
    ]


_api = None
_streams = {}
_lock = threading.Lock()


def _table():
    global _api
    if _api is None:
        fn = getattr(_capi.lib, "hvd_device_layer", None)
        if fn is None:
            raise RuntimeError(f"horovod: {_capi.LIBRARY_PATH} has no device "
                               f"layer (hvd_device_layer): a core too old "
                               f"for device streams")
        fn.restype = _c.POINTER(_Api)
        fn.argtypes = []
        api = fn().contents
        if api.struct_size < _Api.stream_native.offset + \
                _c.sizeof(_c.c_void_p):
            raise RuntimeError("horovod: the core's device layer predates "
                               "stream_native (ABI 1.1)")
        _api = api
    return _api


def stream(kind, device_id):
    """The process's stream of the core on device `device_id` of memory
    kind `kind` (_capi.MEM_HOST: the fake device, id 0; _capi.MEM_CUDA),
    made on first use; its hvd_stream handle as an int."""
    key = (kind, device_id)
    handle = _streams.get(key)
    if handle is not None:
        return handle
    with _lock:
        if key not in _streams:
            api = _table()
            out = _c.c_void_p()
            status = api.stream_create(api.ctx, Device(kind, device_id),
                                       _c.byref(out))
            if status != _capi.OK:
                raise RuntimeError(
                    f"horovod: no stream of the core on "
                    f"{'CUDA' if kind == _capi.MEM_CUDA else 'host'} device "
                    f"{device_id}: {_capi.last_error()}")
            _streams[key] = out.value
        return _streams[key]


def native_handle(handle):
    """The device's own handle behind the stream `handle` (a CUDA stream's
    cudaStream_t as an int); 0 for a fake-device stream."""
    api = _table()
    return api.stream_native(api.ctx, handle) or 0

