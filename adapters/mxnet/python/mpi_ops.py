"""Horovod's collective ops for MXNet NDArrays, over the core's C API.

Every op is synchronous towards MXNet's engine: it waits for the engine to
finish writing its inputs (and, for arrays the core writes, every pending
access), hands the memory to the core through DLPack, and returns once the
core has written the result. The Python thread blocks meanwhile (the GIL
released), so an array is never read by MXNet before the core wrote it and
nothing compiles against MXNet. `priority` is accepted and ignored: the
core's negotiation orders the ops.

Failures raise MXNetError, as Horovod's MXNet ops do, and also the common
exception (ValueError for bad arguments, HorovodInternalError for an op
that failed on the ranks, e.g. a mismatch).
"""

import contextlib

import mxnet as mx
import numpy as np

from horovod.common import _capi
from horovod.common import basics as _basics
from horovod.common import collective as _collective
from horovod.common import exceptions as _exceptions
from horovod.common.basics import (  # noqa: F401  (the public API)
    Adasum, Average, Max, Min, Product, Sum, ccl_built, cross_rank,
    cross_size, cuda_built, ddl_built, gloo_built, gloo_enabled, init,
    is_homogeneous, is_initialized, local_rank, local_size, mpi_built,
    mpi_enabled, mpi_threads_supported, nccl_built, rank, rocm_built,
    shutdown, size, start_timeline, stop_timeline)
from horovod.common.dlpack import HandleOwner
from horovod.common.process_sets import (  # noqa: F401
    ProcessSet, add_process_set, global_process_set, remove_process_set)
from horovod.common.util import get_average_backwards_compatibility_fun
from horovod.mxnet import _ndarrays

_MXNetError = mx.base.MXNetError

handle_average_backwards_compatibility = \
    get_average_backwards_compatibility_fun(_basics)


class HorovodInternalError(_exceptions.HorovodInternalError, _MXNetError):
    """A collective failed on the ranks (a mismatch, a failed rank, a
    shutdown): Horovod's error, and MXNet's."""


class InvalidArgument(ValueError, _MXNetError):
    """An op this rank cannot start: Python's ValueError, and MXNet's."""


@contextlib.contextmanager
def _mxnet_errors():
    try:
        yield
    except (HorovodInternalError, InvalidArgument):
        raise
    except _exceptions.HorovodInternalError as e:
        raise HorovodInternalError(str(e)) from None
    except ValueError as e:
        raise InvalidArgument(str(e)) from None


def _run(collective, kind, name, inputs, outputs=None,
         process_set=global_process_set, **kwargs):
    """Runs one op to completion; returns the finished _native.Handle (the
    caller releases it). inputs / outputs: lists of _ndarrays.Exported,
    alive here until the core has finished with their memory."""
    _collective.set_id(process_set)  # a rank outside the set fails first
    core = _collective.enqueue(
        _ndarrays.describe, collective,
        _collective.op_name(kind, name, process_set), inputs, outputs,
        process_set=process_set, cache=bool(name), **kwargs)
    core.wait()  # _mxnet_errors makes a failure MXNet's error too
    return core


def _run_released(*args, **kwargs):
    _run(*args, **kwargs).release()


def _empty_like(array, shape=None):
    return mx.nd.empty(array.shape if shape is None else shape,
                       ctx=array.context, dtype=array.dtype)


def _gathered(core, arrays):
    """The outputs the core allocated for a finished op, as NDArrays over
    its memory; the handle is released with the last of them."""
    owner = HandleOwner(core)
    try:
        return [_ndarrays.from_core(core.output(i), a.dtype, owner)
                for i, a in enumerate(arrays)]
    finally:
        owner.done()


# ---- allreduce ------------------------------------------------------------

def _grouped_allreduce(tensors, average, name, prescale_factor,
                       postscale_factor, process_set, op, in_place):
    op = handle_average_backwards_compatibility(op, average)
    if op == Adasum and process_set.process_set_id != 0:
        raise NotImplementedError(
            "Adasum does not support non-global process sets yet.")
    tensors = list(tensors)
    if not tensors:
        return tensors
    kind = "allreduce" if len(tensors) == 1 else "grouped_allreduce"
    if in_place:
        inputs, outputs, results = _ndarrays.writable(tensors), None, tensors
    else:
        inputs = _ndarrays.readable(tensors)
        results = [_empty_like(t) for t in tensors]
        outputs = _ndarrays.writable(results)
    _run_released(_capi.COLL_ALLREDUCE, kind, name, inputs, outputs,
                  process_set=process_set, op=op, prescale=prescale_factor,
                  postscale=postscale_factor)
    return results


def allreduce(tensor, average=None, name=None, priority=0,
              prescale_factor=1.0, postscale_factor=1.0,
              process_set=global_process_set, op=None):
    """Reduces `tensor` over the process set (Average by default; `op`
    supersedes the deprecated `average`) into a new array."""
    with _mxnet_errors():
        return _grouped_allreduce([tensor], average, name, prescale_factor,
                                  postscale_factor, process_set, op,
                                  in_place=False)[0]


def allreduce_(tensor, average=None, name=None, priority=0,
               prescale_factor=1.0, postscale_factor=1.0,
               process_set=global_process_set, op=None):
    """As allreduce, writing the result into `tensor`; returns it."""
    with _mxnet_errors():
        return _grouped_allreduce([tensor], average, name, prescale_factor,
                                  postscale_factor, process_set, op,
                                  in_place=True)[0]


def grouped_allreduce(tensors, average=None, name=None, priority=0,
                      prescale_factor=1.0, postscale_factor=1.0,
                      process_set=global_process_set, op=None):
    """Reduces a list of arrays as one unit (negotiated and fused
    together); returns the list of results."""
    with _mxnet_errors():
        return _grouped_allreduce(tensors, average, name, prescale_factor,
                                  postscale_factor, process_set, op,
                                  in_place=False)


def grouped_allreduce_(tensors, average=None, name=None, priority=0,
                       prescale_factor=1.0, postscale_factor=1.0,
                       process_set=global_process_set, op=None):
    """As grouped_allreduce, in place; returns `tensors`."""
    with _mxnet_errors():
        return _grouped_allreduce(tensors, average, name, prescale_factor,
                                  postscale_factor, process_set, op,
                                  in_place=True)


# ---- allgather ------------------------------------------------------------

def _allgather(tensors, name, process_set, kind):
    core = _run(_capi.COLL_ALLGATHER, kind, name,
                _ndarrays.readable(tensors), process_set=process_set)
    return _gathered(core, tensors)


def allgather(tensor, name=None, priority=0, process_set=global_process_set):
    """Concatenates `tensor` from every rank of the set along the first
    dimension (which may differ between ranks)."""
    with _mxnet_errors():
        return _allgather([tensor], name, process_set, "allgather")[0]


def grouped_allgather(tensors, name=None, priority=0,
                      process_set=global_process_set):
    """allgather of a list of arrays as one unit."""
    with _mxnet_errors():
        tensors = list(tensors)
        if not tensors:
            return tensors
        return _allgather(tensors, name, process_set, "grouped_allgather")


# ---- broadcast ------------------------------------------------------------

def broadcast(tensor, root_rank, name=None, priority=0,
              process_set=global_process_set):
    """root_rank's `tensor` on every rank of the set, as a new array."""
    with _mxnet_errors():
        inputs = _ndarrays.readable([tensor])
        output = _empty_like(tensor)
        _run_released(_capi.COLL_BROADCAST, "broadcast", name, inputs,
                      _ndarrays.writable([output]),
                      process_set=process_set, root=root_rank)
        return output


def broadcast_(tensor, root_rank, name=None, priority=0,
               process_set=global_process_set):
    """root_rank's `tensor` written into `tensor` on every rank; returns
    it."""
    with _mxnet_errors():
        _run_released(_capi.COLL_BROADCAST, "broadcast", name,
                      _ndarrays.writable([tensor]),
                      process_set=process_set, root=root_rank)
        return tensor


# ---- alltoall -------------------------------------------------------------

def _split_list(splits):
    if isinstance(splits, mx.nd.NDArray):
        splits = splits.asnumpy()
    splits = np.asarray(splits)
    if splits.ndim != 1:
        raise ValueError("splits must be a 1-D array or a list")
    if splits.size and not np.issubdtype(splits.dtype, np.integer):
        raise ValueError("splits must hold integers")
    return [int(s) for s in splits]


def alltoall(tensor, splits=None, name=None, priority=0,
             process_set=global_process_set):
    """Sends splits[i] rows of `tensor` to rank i of the set (equal parts
    when splits is None) and returns the rows received, concatenated; with
    `splits` given, also the rows received from each rank (int32)."""
    with _mxnet_errors():
        split_list = None if splits is None else _split_list(splits)
        core = _run(_capi.COLL_ALLTOALL, "alltoall", name,
                    _ndarrays.readable([tensor]), process_set=process_set,
                    splits=split_list)
        received = core.received_splits()
        output = _gathered(core, [tensor])[0]
        if splits is None:
            return output
        return output, mx.nd.array(received, dtype=np.int32)


# ---- reducescatter --------------------------------------------------------

def _reducescatter(tensors, op, name, process_set, prescale_factor,
                   postscale_factor, kind):
    n, r = process_set.size(), process_set.rank()
    results = []
    for t in tensors:
        _ndarrays.check(t)
        rows = t.shape[0] // n + (1 if r < t.shape[0] % n else 0)
        if rows == 0:
            raise ValueError(
                f"reducescatter of {t.shape[0]} rows over {n} ranks leaves "
                f"rank {r} none, and MXNet arrays cannot be empty")
        results.append(_empty_like(t, (rows,) + tuple(t.shape[1:])))
    _run_released(_capi.COLL_REDUCESCATTER, kind, name,
                  _ndarrays.readable(tensors), _ndarrays.writable(results),
                  process_set=process_set, op=op, prescale=prescale_factor,
                  postscale=postscale_factor)
    return results


def reducescatter(tensor, op=Average, name=None, priority=0,
                  process_set=global_process_set, prescale_factor=1.0,
                  postscale_factor=1.0):
    """Reduces `tensor` over the set and returns this rank's rows of the
    first dimension (rows / size each, one more on the first rows % size
    ranks)."""
    with _mxnet_errors():
        _collective.set_id(process_set)
        return _reducescatter([tensor], op, name, process_set,
                              prescale_factor, postscale_factor,
                              "reducescatter")[0]


def grouped_reducescatter(tensors, op=Average, name=None, priority=0,
                          process_set=global_process_set,
                          prescale_factor=1.0, postscale_factor=1.0):
    """reducescatter of a list of arrays as one unit."""
    with _mxnet_errors():
        _collective.set_id(process_set)
        tensors = list(tensors)
        if not tensors:
            return tensors
        return _reducescatter(tensors, op, name, process_set,
                              prescale_factor, postscale_factor,
                              "grouped_reducescatter")
