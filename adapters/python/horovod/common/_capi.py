"""The core's public C API (core/include/horovod/horovod.h): through ctypes,
and for the per-op calls (enqueue, wait, poll, outputs, release) through
`native`, the extension horovod.common._native on CPython's stable ABI,
where ctypes' per-call marshalling would cost more than the runtime itself.

Binding the C API rather than a framework's C++ ABI keeps one build of this
package working across framework releases. Both release the GIL while
waiting, so a wait blocks only the calling thread. Every wait for an op
(a collective, a barrier, join, a process-set change) is a
_native.Handle's wait(): slices of 0.1 s between which signal handlers
run, so Ctrl-C raises KeyboardInterrupt within one slice.
"""

import ctypes
import glob
import os

# Status codes (abi.h).
OK = 0
AGAIN = 1
ERR_UNSUPPORTED = -1
ERR_INVALID_ARGUMENT = -2
ERR_OUT_OF_MEMORY = -3
ERR_PEER_FAILED = -4
ERR_TIMEOUT = -5
ERR_ABORTED = -6
ERR_EPOCH_MISMATCH = -7
ERR_MISMATCH = -8
ERR_VERSION = -9
ERR_CONFIG = -10
ERR_SYSTEM = -11
ERR_INTERNAL = -12
ERR_TRUNCATED = -13
ERR_NOT_FOUND = -14
ERR_SHUT_DOWN = -15

# Collectives.
COLL_ALLREDUCE = 0
COLL_ALLGATHER = 1
COLL_BROADCAST = 2
COLL_ALLTOALL = 3
COLL_REDUCESCATTER = 4
COLL_BARRIER = 5
COLL_JOIN = 6

# Reduction ops.
OP_SUM = 0
OP_AVERAGE = 1
OP_MIN = 2
OP_MAX = 3
OP_PRODUCT = 4
OP_ADASUM = 5

# Memory kinds.
MEM_HOST = 0
MEM_CUDA = 1

# DLPack type codes (tensor.h).
DL_INT = 0
DL_UINT = 1
DL_FLOAT = 2
DL_BFLOAT = 4
DL_BOOL = 6


class InitOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t),
                ("ext", ctypes.c_void_p),
                ("config_path", ctypes.c_char_p),
                ("process_sets", ctypes.POINTER(ctypes.POINTER(ctypes.c_int32))),
                ("process_set_sizes", ctypes.POINTER(ctypes.c_int32)),
                ("process_set_count", ctypes.c_int32)]


def package_dir():
    """The folder of the `horovod` package."""
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def lib_dir():
    """Where libhorovod.so lives; its plugins are in lib_dir()/horovod."""
    return os.path.join(package_dir(), "lib")


def _library_path():
    candidates = sorted(glob.glob(os.path.join(lib_dir(), "libhorovod.so*")),
                        key=len)
    if not candidates:
        raise ImportError(
            f"horovod: libhorovod.so not found in {lib_dir()}: the package "
            f"is incomplete (install it with pip, or use the build tree's "
            f"python/ folder)")
    return candidates[0]


def _declare(lib):
    c = ctypes
    sigs = {
        "hvd_init": (c.c_int32, [c.POINTER(InitOptions)]),
        "hvd_shutdown": (c.c_int32, []),
        "hvd_is_initialized": (c.c_int32, []),
        "hvd_rank": (c.c_int32, []),
        "hvd_size": (c.c_int32, []),
        "hvd_local_rank": (c.c_int32, []),
        "hvd_local_size": (c.c_int32, []),
        "hvd_cross_rank": (c.c_int32, []),
        "hvd_cross_size": (c.c_int32, []),
        "hvd_last_error": (c.c_char_p, []),
        "hvd_status_string": (c.c_char_p, [c.c_int32]),
        "hvd_add_process_set": (
            c.c_int32, [c.POINTER(c.c_int32), c.c_int32,
                        c.POINTER(c.c_int32)]),
        "hvd_remove_process_set": (c.c_int32, [c.c_int32]),
    }
    # Later additions to horovod.h: present in newer cores only.
    optional = {
        "hvd_is_homogeneous": (c.c_int32, []),
        "hvd_start_timeline": (c.c_int32, [c.c_char_p, c.c_int32]),
        "hvd_stop_timeline": (c.c_int32, []),
    }
    for table, required in ((sigs, True), (optional, False)):
        for name, (restype, argtypes) in table.items():
            fn = getattr(lib, name, None)
            if fn is None:
                if required:
                    raise ImportError(f"horovod: {lib._name} lacks {name}")
                continue
            fn.restype = restype
            fn.argtypes = argtypes
    return lib


def has(name):
    return hasattr(lib, name)


LIBRARY_PATH = _library_path()
lib = _declare(ctypes.CDLL(LIBRARY_PATH))


def int32_output(core):
    """The int32 scalar a finished _native.Handle holds as output 0 (join:
    the last rank to join; a process-set change: the set's id); releases
    the handle."""
    try:
        data, _, byte_offset = core.output(0)
        return ctypes.c_int32.from_address(data + byte_offset).value
    finally:
        core.release()


def last_error():
    return (lib.hvd_last_error() or b"").decode("utf-8", "replace")


def status_name(status):
    return (lib.hvd_status_string(status) or b"").decode()


try:
    # Linked to libhorovod.so in lib_dir(): the library loaded above.
    from horovod.common import _native as native  # noqa: F401
except ImportError as error:
    raise ImportError(
        f"horovod: the extension horovod.common._native is missing or "
        f"broken ({error}): the package was built without CPython's "
        f"headers (Debian: apt-get install python3-dev, then rebuild)"
    ) from error
