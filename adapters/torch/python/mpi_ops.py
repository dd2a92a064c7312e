"""Horovod's collective ops for torch tensors, over the core's C API.

Inputs are handed to the core in place (data pointer, dtype, shape); the
outputs the core allocates (allgather, alltoall) come back through DLPack
without a copy. Waiting releases the GIL. Nothing here compiles against
torch, so one build serves every torch 2.x release.
"""

import functools

import torch

from horovod.common import _capi
from horovod.common import basics as _basics
from horovod.common import collective as _collective
from horovod.common import process_sets as _process_sets
from horovod.common.basics import (  # noqa: F401  (the public API)
    Adasum, Average, Max, Min, Product, Sum, ccl_built, cross_rank,
    cross_size, cuda_built, ddl_built, gloo_built, gloo_enabled, init,
    is_homogeneous, is_initialized, local_rank, local_size, mpi_built,
    mpi_enabled, mpi_threads_supported, nccl_built, rank, rocm_built,
    shutdown, size, start_timeline, stop_timeline)
from horovod.common.exceptions import HorovodInternalError  # noqa: F401
from horovod.common.process_sets import (  # noqa: F401
    ProcessSet, add_process_set, global_process_set, remove_process_set)
from horovod.common.util import get_average_backwards_compatibility_fun
from horovod.torch import _device_path
from horovod.torch import _handles
from horovod.torch import _tensors
from horovod.torch._allreduce import (  # noqa: F401  (the public API)
    HorovodAllreduce, HorovodGroupedAllreduce, _allreduce_each_async_,
    allreduce, allreduce_, allreduce_async, allreduce_async_,
    grouped_allreduce, grouped_allreduce_, grouped_allreduce_async,
    grouped_allreduce_async_)
from horovod.torch._staging import back_to as _back_to
from horovod.torch._staging import check_all as _check_all
from horovod.torch._staging import host as _host
from horovod.torch._staging import writer as _writer
from horovod.torch.compression import Compression

handle_average_backwards_compatibility = \
    get_average_backwards_compatibility_fun(_basics)

_register = _handles.register
_released = _handles.released
poll = _handles.poll
synchronize = _handles.synchronize

_op_name = _collective.op_name
_set_id = _collective.set_id


# Starts one op on the core; returns its _native.Handle. Tensors go as
# they are: the extension reads them (_tensors registered the dtypes).
_enqueue = functools.partial(_collective.enqueue, None)


def _start(collective, kind, name, inputs, finish, keep,
           process_set=global_process_set, **kwargs):
    _set_id(process_set)  # a rank outside the set fails before naming
    core = _enqueue(collective, _op_name(kind, name, process_set), inputs,
                    process_set=process_set, cache=bool(name),
                    stream=_device_path.stream_for(inputs), **kwargs)
    return _register(core, keep, finish)


# ---- allgather ------------------------------------------------------------

def _gathered(tensors, single):
    """finish() for ops whose outputs the core allocated."""

    def finish(core):
        owner = _tensors.HandleOwner(core)
        try:
            out = []
            for i, t in enumerate(tensors):
                out.append(_back_to(t, _tensors.from_core(
                    core.output(i), t.dtype, owner)))
        finally:
            owner.done()
        return out[0] if single else tuple(out)

    return finish


def _allgather_start(tensors, name, process_set, single):
    hosts = [_host(t) for t in tensors]
    for h in hosts:
        if h.dim() == 0:
            raise ValueError("allgather needs tensors of at least one "
                             "dimension")
    kind = "allgather" if single else "grouped_allgather"
    given = _device_path.allgather_given(hosts, name, process_set)
    finish = _gathered(list(tensors), single) if given is None else \
        _released(lambda: given[0] if single else tuple(given))
    return _start(_capi.COLL_ALLGATHER, kind, name, hosts, finish,
                  (hosts, given), process_set=process_set, given=given)


def allgather_async(tensor, name=None, process_set=global_process_set):
    """Starts concatenating `tensor` from every rank of the process set
    along the first dimension (which may differ between ranks)."""
    return _allgather_start([tensor], name, process_set, single=True)


def grouped_allgather_async(tensors, name=None,
                            process_set=global_process_set):
    return _allgather_start(list(tensors), name, process_set, single=False)


class HorovodAllgather(torch.autograd.Function):
    """allgather with a gradient: this rank's rows of the output gradient
    averaged over the set (Horovod's definition)."""

    @staticmethod
    def forward(ctx, tensor, name, process_set):
        ctx.dim = tensor.shape[0] if tensor.dim() else 0
        ctx.process_set = process_set
        return synchronize(allgather_async(tensor, name, process_set))

    @staticmethod
    def backward(ctx, grad_output):
        grad_reduced = allreduce(grad_output, op=Average,
                                 process_set=ctx.process_set)
        dims = _device_path.gathered_rows([ctx.dim], None,
                                          ctx.process_set)[:, 0]
        r = ctx.process_set.rank()
        offset = int(dims[:r].sum()) if r > 0 else 0
        return grad_reduced.narrow(0, offset, ctx.dim), None, None


def allgather(tensor, name=None, process_set=global_process_set):
    """Concatenates `tensor` from every rank along the first dimension;
    differentiable."""
    _tensors.check_dtype(tensor)
    return HorovodAllgather.apply(tensor, name, process_set)


class HorovodGroupedAllgather(torch.autograd.Function):

    @staticmethod
    def forward(ctx, name, process_set, *tensors):
        ctx.dims = [t.shape[0] if t.dim() else 0 for t in tensors]
        ctx.process_set = process_set
        return tuple(synchronize(grouped_allgather_async(tensors, name,
                                                         process_set)))

    @staticmethod
    def backward(ctx, *grad_outputs):
        grads = grouped_allreduce(list(grad_outputs), op=Average,
                                  process_set=ctx.process_set)
        dims = _device_path.gathered_rows(ctx.dims, None, ctx.process_set)
        r = ctx.process_set.rank()
        out = []
        for i, g in enumerate(grads):
            offset = int(dims[:r, i].sum()) if r > 0 else 0
            out.append(g.narrow(0, offset, ctx.dims[i]))
        return (None, None) + tuple(out)


def grouped_allgather(tensors, name=None, process_set=global_process_set):
    """allgather of a list of tensors as one unit; differentiable."""
    _check_all(tensors)
    return HorovodGroupedAllgather.apply(name, process_set, *tensors)


# ---- broadcast ------------------------------------------------------------

def _broadcast_start(tensor, root_rank, name, process_set, in_place):
    host = _host(tensor)
    if not is_initialized():
        raise ValueError(_basics._NOT_INITIALIZED)
    _set_id(process_set)
    root = _process_sets.root_in_set(process_set, root_rank)
    if in_place:
        target = host
        write = _writer([tensor], [host])

        def value():
            return write()[0]
    else:
        target = host.clone() if host is tensor or host.data_ptr() == \
            tensor.data_ptr() else host

        def value():
            return _back_to(tensor, target)
    return _start(_capi.COLL_BROADCAST, "broadcast", name, [target],
                  _released(value), (host, target), process_set=process_set,
                  root=root)


def broadcast_async(tensor, root_rank, name=None,
                    process_set=global_process_set):
    """Starts sending root_rank's `tensor` to every rank, into a new
    tensor."""
    return _broadcast_start(tensor, root_rank, name, process_set, False)


def broadcast_async_(tensor, root_rank, name=None,
                     process_set=global_process_set):
    """As broadcast_async, into `tensor` itself."""
    return _broadcast_start(tensor, root_rank, name, process_set, True)


def broadcast_(tensor, root_rank, name=None, process_set=global_process_set):
    return synchronize(broadcast_async_(tensor, root_rank, name, process_set))


class HorovodBroadcast(torch.autograd.Function):
    """broadcast with a gradient: the gradient averaged over the set on the
    root, zero elsewhere (Horovod's definition)."""

    @staticmethod
    def forward(ctx, tensor, root_rank, name, process_set):
        ctx.root_rank = root_rank
        ctx.process_set = process_set
        return synchronize(broadcast_async(tensor, root_rank, name,
                                           process_set))

    @staticmethod
    def backward(ctx, grad_output):
        grad_reduced = allreduce(grad_output, op=Average,
                                 process_set=ctx.process_set)
        if rank() != ctx.root_rank:
            grad_reduced = grad_reduced * 0
        return grad_reduced, None, None, None


def broadcast(tensor, root_rank, name=None, process_set=global_process_set):
    """root_rank's `tensor` on every rank, as a new tensor;
    differentiable. root_rank is a global rank, a member of process_set."""
    _tensors.check_dtype(tensor)
    return HorovodBroadcast.apply(tensor, root_rank, name, process_set)


# ---- alltoall -------------------------------------------------------------

def _split_list(splits):
    if splits is None:
        return None
    if isinstance(splits, torch.Tensor):
        if splits.dim() != 1:
            raise ValueError("splits must be a 1-D tensor or a list")
        if splits.dtype.is_floating_point or splits.dtype == torch.bool:
            raise ValueError("splits must hold integers")
        return [int(s) for s in splits.tolist()]
    return [int(s) for s in splits]


def alltoall_async(tensor, splits=None, name=None,
                   process_set=global_process_set):
    """Starts sending splits[i] rows of `tensor` to rank i (equal parts when
    splits is None); synchronize() returns (output, received_splits)."""
    host = _host(tensor)
    if host.dim() == 0:
        raise ValueError("alltoall needs a tensor of at least one dimension")
    split_list = _split_list(splits)
    given = _device_path.alltoall_given(host, split_list, name, process_set)
    gathered = _gathered([tensor], single=True) if given is None else \
        _released(lambda: given[0])
    # As Horovod: the received splits have the dtype of the splits given.
    splits_dtype = splits.dtype if isinstance(splits, torch.Tensor) \
        else torch.int32

    def finish(core):
        received = torch.tensor(core.received_splits(),
                                dtype=splits_dtype)
        return gathered(core), received

    return _start(_capi.COLL_ALLTOALL, "alltoall", name, [host], finish,
                  (host, given), process_set=process_set, splits=split_list,
                  given=given)


class HorovodAlltoall(torch.autograd.Function):
    """alltoall with a gradient: the gradient sent back the way it came."""

    @staticmethod
    def forward(ctx, tensor, splits, name, process_set):
        output, received = synchronize(alltoall_async(tensor, splits, name,
                                                      process_set))
        ctx.process_set = process_set
        ctx.received = received
        ctx.mark_non_differentiable(received)
        return output, received

    @staticmethod
    def backward(ctx, grad_output, grad_received):
        grad, _ = synchronize(alltoall_async(
            grad_output.contiguous(), ctx.received,
            process_set=ctx.process_set))
        return grad, None, None, None


def alltoall(tensor, splits=None, name=None, process_set=global_process_set):
    """Scatters slices of `tensor` to every rank and gathers theirs, along
    the first dimension; differentiable. Returns the output, and with
    `splits` given, also the rows received from each rank."""
    output, received = HorovodAlltoall.apply(tensor, splits, name,
                                             process_set)
    if splits is None:
        return output
    return output, received


# ---- reducescatter --------------------------------------------------------

def _reducescatter_start(tensors, name, op, process_set, prescale_factor,
                         postscale_factor, single):
    _basics.check_reducescatter_op(op)
    hosts = [_host(t) for t in tensors]
    n = process_set.size()
    r = process_set.rank()
    results = []
    for h in hosts:
        if h.dim() == 0:
            raise ValueError("reducescatter needs tensors of at least one "
                             "dimension")
        rows = h.shape[0] // n + (1 if r < h.shape[0] % n else 0)
        results.append(_device_path.empty_like_on(
            h, (rows,) + tuple(h.shape[1:])))

    def value():
        out = tuple(_back_to(t, x) for t, x in zip(tensors, results))
        return out[0] if single else out

    kind = "reducescatter" if single else "grouped_reducescatter"
    return _start(_capi.COLL_REDUCESCATTER, kind, name, hosts,
                  _released(value), (hosts, results), outputs=results,
                  process_set=process_set, op=op, prescale=prescale_factor,
                  postscale=postscale_factor)


def reducescatter_async(tensor, name=None, op=Average,
                        process_set=global_process_set, prescale_factor=1.0,
                        postscale_factor=1.0):
    """Starts reducing `tensor` over the process set and keeping this
    rank's rows of the first dimension (rows / size each, one more on the
    first rows % size ranks)."""
    return _reducescatter_start([tensor], name, op, process_set,
                                prescale_factor, postscale_factor, True)


def grouped_reducescatter_async(tensors, name=None, op=Average,
                                process_set=global_process_set,
                                prescale_factor=1.0, postscale_factor=1.0):
    return _reducescatter_start(list(tensors), name, op, process_set,
                                prescale_factor, postscale_factor, False)


def _scatter_grad(grad, ctx):
    """The output gradient scaled as Horovod scales it before gathering it
    back: by the set's size for Sum, then by the prescale and postscale
    factors (one multiplication each, in that order)."""
    if ctx.op == Sum:
        grad = grad * ctx.process_set.size()
    if ctx.prescale_factor != 1.0:
        grad = grad * ctx.prescale_factor
    if ctx.postscale_factor != 1.0:
        grad = grad * ctx.postscale_factor
    return grad


def _keep_scatter_args(ctx, op, process_set, prescale_factor,
                       postscale_factor):
    ctx.op = op
    ctx.process_set = process_set
    ctx.prescale_factor = prescale_factor
    ctx.postscale_factor = postscale_factor


class HorovodReducescatter(torch.autograd.Function):
    """reducescatter with a gradient: the allgather of the output gradient
    (times the set's size for Sum, times the scale factors), Horovod's
    definition."""

    @staticmethod
    def forward(ctx, tensor, name, op, process_set, prescale_factor,
                postscale_factor):
        _keep_scatter_args(ctx, op, process_set, prescale_factor,
                           postscale_factor)
        return synchronize(reducescatter_async(
            tensor, name, op, process_set, prescale_factor,
            postscale_factor))

    @staticmethod
    def backward(ctx, grad_output):
        grad = allgather(_scatter_grad(grad_output, ctx).contiguous(),
                         process_set=ctx.process_set)
        return grad, None, None, None, None, None


def reducescatter(tensor, name=None, compression=Compression.none,
                  op=Average, process_set=global_process_set,
                  prescale_factor=1.0, postscale_factor=1.0):
    """Reduces `tensor` over the process set and returns this rank's rows;
    differentiable."""
    _tensors.check_dtype(tensor)
    compressed, ctx = compression.compress(tensor)
    out = HorovodReducescatter.apply(compressed, name, op, process_set,
                                     prescale_factor, postscale_factor)
    return compression.decompress(out, ctx)


class HorovodGroupedReducescatter(torch.autograd.Function):

    @staticmethod
    def forward(ctx, name, op, process_set, prescale_factor,
                postscale_factor, *tensors):
        _keep_scatter_args(ctx, op, process_set, prescale_factor,
                           postscale_factor)
        return tuple(synchronize(grouped_reducescatter_async(
            tensors, name, op, process_set, prescale_factor,
            postscale_factor)))

    @staticmethod
    def backward(ctx, *grad_outputs):
        grads = grouped_allgather(
            [_scatter_grad(g, ctx).contiguous() for g in grad_outputs],
            process_set=ctx.process_set)
        return (None,) * 5 + tuple(grads)


def grouped_reducescatter(tensors, name=None, compression=Compression.none,
                          op=Average, process_set=global_process_set,
                          prescale_factor=1.0, postscale_factor=1.0):
    _check_all(tensors)
    pairs = [compression.compress(t) for t in tensors]
    out = HorovodGroupedReducescatter.apply(
        name, op, process_set, prescale_factor, postscale_factor,
        *[p[0] for p in pairs])
    return [compression.decompress(o, p[1]) for o, p in zip(out, pairs)]


# ---- sparse, join, barrier ------------------------------------------------

def sparse_allreduce_async(tensor, name, op, process_set=global_process_set):
    """Starts reducing a sparse COO tensor by gathering every rank's indices
    and values; returns a handle (a callable) that synchronize() turns into
    the reduced sparse tensor."""
    t = tensor.coalesce() if not tensor.is_coalesced() else tensor
    indices_handle = allgather_async(
        t._indices().transpose(0, 1).contiguous(), name=f"{name}.indices",
        process_set=process_set)
    values_handle = allgather_async(t._values().contiguous(),
                                    name=f"{name}.values",
                                    process_set=process_set)

    def handle():
        values = synchronize(values_handle)
        indices = synchronize(indices_handle)
        if op == Average:
            values = values / process_set.size()
        if indices.dim() == 0 or values.dim() == 0:
            return t.new().resize_as_(t)
        return torch.sparse_coo_tensor(indices.transpose(0, 1), values,
                                       t.size())

    return handle


def join(device=-1):
    """Declares that this rank has no more data: until every rank has
    joined, the others' allreduces run with this rank contributing zeros.
    Returns the rank that joined last."""
    return _collective.join()


def barrier(process_set=global_process_set):
    """Returns once every rank of the process set has called barrier()."""
    _collective.barrier(process_set)
