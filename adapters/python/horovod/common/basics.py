"""What every framework binding shares: init and shutdown, the job's
layout, reduction ops, build queries, and turning the core's statuses into
Horovod's exceptions."""

import atexit
import ctypes
import functools
import json
import os
import subprocess

from horovod.common import _capi
from horovod.common import process_sets as _ps
from horovod.common.exceptions import (_NOT_INITIALIZED,  # noqa: F401
                                       HorovodInternalError,
                                       raise_for_status)

# Reduction ops, numbered as in Horovod.
Average = 0
Sum = 1
Adasum = 2
Min = 3
Max = 4
Product = 5

_CORE_OP = {Average: _capi.OP_AVERAGE, Sum: _capi.OP_SUM,
            Adasum: _capi.OP_ADASUM, Min: _capi.OP_MIN, Max: _capi.OP_MAX,
            Product: _capi.OP_PRODUCT}

def core_op(op):
    """The core's reduction op for one of Horovod's."""
    try:
        return _CORE_OP[op]
    except (KeyError, TypeError):
        raise ValueError(f"unknown reduction op {op!r} (use hvd.Average, "
                         f"hvd.Sum, hvd.Adasum, hvd.Min, hvd.Max or "
                         f"hvd.Product)") from None


def _checked(fn):
    value = fn()
    if value < 0:
        raise ValueError(_NOT_INITIALIZED)
    return value


def _to_world_ranks(comm):
    if comm is None:
        return None
    if isinstance(comm, (list, tuple, range)):
        return sorted(int(r) for r in comm)
    # An mpi4py communicator.
    return list(range(comm.Get_size())) if comm.Get_rank() >= 0 else None


def init(comm=None, process_sets=None):
    """Starts the runtime (collective over the job horovodrun started).

    comm: None, or the whole job as a list of ranks or an mpi4py
    communicator (a sub-communicator is not supported: use process sets).
    process_sets: None, a list of ProcessSet (or lists of ranks) made
    available as static sets, or "dynamic" to allow add_process_set() and
    remove_process_set() later.
    """
    if _capi.lib.hvd_is_initialized():
        return  # Horovod allows calling init() again
    dynamic = isinstance(process_sets, str)
    if dynamic and process_sets != "dynamic":
        raise ValueError(f"process_sets={process_sets!r}: expected a list "
                         f"of ProcessSet or 'dynamic'")
    static = []
    if process_sets is not None and not dynamic:
        for ps in process_sets:
            if not isinstance(ps, _ps.ProcessSet):
                ps = _ps.ProcessSet(ps)
            ps._resolve_comm()
            static.append(ps)
    if dynamic:
        os.environ["HOROVOD_DYNAMIC_PROCESS_SETS"] = "1"
    arrays = [(ctypes.c_int32 * len(ps.ranks))(*ps.ranks) for ps in static]
    opts = _capi.InitOptions()
    opts.struct_size = ctypes.sizeof(_capi.InitOptions)
    opts.process_set_count = len(static)
    if static:
        ptrs = (ctypes.POINTER(ctypes.c_int32) * len(static))(
            *[ctypes.cast(a, ctypes.POINTER(ctypes.c_int32)) for a in arrays])
        sizes = (ctypes.c_int32 * len(static))(*[len(ps.ranks) for ps in static])
        opts.process_sets = ptrs
        opts.process_set_sizes = sizes
    if os.environ.get("HOROVOD_ELASTIC") == "1":
        _init_in_next_world(opts)
    else:
        status = _capi.lib.hvd_init(ctypes.byref(opts))
        if status != _capi.OK:
            raise_for_status(status, "init")
    world = _capi.lib.hvd_size()
    wanted = _to_world_ranks(comm)
    if wanted is not None and wanted != list(range(world)):
        _capi.lib.hvd_shutdown()
        raise ValueError(f"init(comm=...): the job has {world} ranks; a "
                         f"communicator over ranks {wanted} is not "
                         f"supported (use process sets)")
    _ps._setup(world, static)
    global _atexit_registered
    if not _atexit_registered:
        # A script that ends without shutdown() leaves the job cleanly,
        # not as a rank that vanished.
        atexit.register(_shutdown_at_exit)
        _atexit_registered = True


_atexit_registered = False


def _init_in_next_world(opts):
    """An elastic worker's init: in the next world the launcher assigns
    this worker, or, when that world breaks before it begins (a member
    failed, or a newer world superseded it), in the one after."""
    from horovod.runner.elastic import worker
    timeout = float(os.environ.get("HOROVOD_ELASTIC_TIMEOUT", "600"))
    while True:
        try:
            worker.enter_next_world(timeout)
        except (worker.RendezvousUnavailable, OSError) as e:
            raise HorovodInternalError(f"elastic init: {e}") from None
        status = _capi.lib.hvd_init(ctypes.byref(opts))
        if status == _capi.OK:
            return
        try:
            raise_for_status(status, "init")
        except HorovodInternalError:
            continue  # the world broke before it began: the next one


def _shutdown_at_exit():
    if _capi.lib.hvd_is_initialized():
        _capi.lib.hvd_shutdown()


def shutdown():
    """Stops the runtime; pending ops fail. init() may be called again."""
    _ps._teardown()
    status = _capi.lib.hvd_shutdown()
    if status != _capi.OK:
        raise_for_status(status, "shutdown")


def is_initialized():
    return bool(_capi.lib.hvd_is_initialized())


def rank():
    return _checked(_capi.lib.hvd_rank)


def size():
    return _checked(_capi.lib.hvd_size)


def local_rank():
    return _checked(_capi.lib.hvd_local_rank)


def local_size():
    return _checked(_capi.lib.hvd_local_size)


def cross_rank():
    return _checked(_capi.lib.hvd_cross_rank)


def cross_size():
    return _checked(_capi.lib.hvd_cross_size)


def is_homogeneous():
    """Whether every host runs the same number of ranks."""
    if not _capi.has("hvd_is_homogeneous"):
        raise NotImplementedError("this core has no hvd_is_homogeneous")
    value = _capi.lib.hvd_is_homogeneous()
    if value < 0:
        raise ValueError(_NOT_INITIALIZED)
    return bool(value)


def start_timeline(file_path, mark_cycles=False):
    """Starts writing a timeline (a Chrome trace) to file_path; rank 0
    writes it."""
    if not is_initialized():
        raise ValueError(_NOT_INITIALIZED)
    if not _capi.has("hvd_start_timeline"):
        raise NotImplementedError("this core has no timeline")
    status = _capi.lib.hvd_start_timeline(os.fsencode(file_path),
                                          1 if mark_cycles else 0)
    if status != _capi.OK:
        raise_for_status(status, "start_timeline")


def stop_timeline():
    """Writes out and closes the timeline started by start_timeline()."""
    if not is_initialized():
        raise ValueError(_NOT_INITIALIZED)
    if not _capi.has("hvd_stop_timeline"):
        raise NotImplementedError("this core has no timeline")
    status = _capi.lib.hvd_stop_timeline()
    if status != _capi.OK:
        raise_for_status(status, "stop_timeline")


# ---- build queries --------------------------------------------------------
# This build is one core plus plugins: a transport is "built" when its
# plugin ships with the package and loads here (its libraries present), and
# "enabled" when the effective configuration also selects it.

def plugin_path(kind, name):
    return os.path.join(_capi.lib_dir(), "horovod",
                        f"libhorovod-{kind}-{name}.so")


def _load_plugin(kind, name):
    """The plugin's shared object loaded here (its libraries found), or
    None."""
    path = plugin_path(kind, name)
    if not os.path.exists(path):
        return None
    try:
        plugin = ctypes.CDLL(path, mode=os.RTLD_LAZY | os.RTLD_LOCAL)
    except OSError:
        return None
    return plugin if hasattr(plugin, f"hvd_{kind}_get_api") else None


@functools.lru_cache(maxsize=None)
def plugin_loads(kind, name):
    return _load_plugin(kind, name) is not None


@functools.lru_cache(maxsize=None)
def _transports_in_use():
    """The transports the effective configuration selects and that load,
    as horovod-info reports them (the same resolution the runtime does)."""
    info = os.path.join(_capi.package_dir(), "bin", "horovod-info")
    try:
        out = subprocess.run([info, "--json"], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, timeout=30,
                             check=True).stdout
        selected = json.loads(out)["plugins"]["selected"]
    except (OSError, subprocess.SubprocessError, ValueError, KeyError):
        return frozenset()
    return frozenset(
        c.get("name") for role in selected
        if str(role.get("role", "")).startswith("transport.")
        for c in role.get("candidates", []) if c.get("used"))


def _transport_enabled(name):
    return plugin_loads("transport", name) and name in _transports_in_use()


def mpi_built():
    """Whether the mpi transport ships and loads here (bool)."""
    return plugin_loads("transport", "mpi")


def mpi_enabled():
    """Whether this job runs over the mpi transport (bool)."""
    return _transport_enabled("mpi")


_MPI_NOT_ENABLED = ("Horovod MPI is not enabled; Please make sure it's "
                    "installed and enabled.")


def mpi_threads_supported():
    """Whether MPI runs at MPI_THREAD_MULTIPLE in this process (other
    threads may then call MPI while Horovod runs). As in Horovod, a
    ValueError when MPI is not in use or Horovod is not initialized."""
    if not mpi_enabled():
        raise ValueError(_MPI_NOT_ENABLED)
    if not is_initialized():
        raise ValueError(_NOT_INITIALIZED)
    import ctypes.util
    name = ctypes.util.find_library("mpi")
    if not name:
        return False
    try:  # the libmpi the transport loaded
        mpi = ctypes.CDLL(name, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
    except OSError:
        return False
    initialised, provided = ctypes.c_int(0), ctypes.c_int(0)
    mpi.MPI_Initialized(ctypes.byref(initialised))
    if not initialised.value:
        return False
    mpi.MPI_Query_thread(ctypes.byref(provided))
    return provided.value >= 3  # MPI_THREAD_MULTIPLE (Open MPI, MPICH)


def gloo_built():
    """Whether the gloo transport ships and loads here (bool)."""
    return plugin_loads("transport", "gloo")


def gloo_enabled():
    """Whether this job runs over the gloo transport (bool)."""
    return _transport_enabled("gloo")


@functools.lru_cache(maxsize=None)
def nccl_built():
    """NCCL's version as Horovod gives it (an int: 22809 for 2.28.9, the
    NCCL_VERSION_CODE) when the nccl transport ships and loads here, else
    0."""
    plugin = _load_plugin("transport", "nccl")
    if plugin is None:
        return 0
    # The plugin links libnccl: its symbols are reachable through the
    # plugin's handle.
    get_version = getattr(plugin, "ncclGetVersion", None)
    if get_version is None:
        return 0
    code = ctypes.c_int(0)
    get_version.restype = ctypes.c_int
    get_version.argtypes = [ctypes.POINTER(ctypes.c_int)]
    if get_version(ctypes.byref(code)) != 0:
        return 0
    return int(code.value)


def cuda_built():
    """Whether GPU collectives on CUDA are available here (bool): the nccl
    transport loads."""
    return nccl_built() > 0


def rocm_built():
    """Always False: no ROCm transport (bool)."""
    return False


def ddl_built():
    """Always False: IBM DDL is not supported (bool)."""
    return False


def ccl_built():
    """Always False: no oneCCL transport (bool)."""
    return False


def check_reducescatter_op(op):
    """Raises what Horovod raises for a reducescatter op it refuses:
    Adasum (HorovodInternalError, a RuntimeError, at the call)."""
    if op == Adasum:
        raise HorovodInternalError(
            "Reducescatter currently only supports SUM and AVERAGE.")
