"""horovod.torch's allreduce family, on one route: one tensor waited for
is one _native.run call (which also makes the result), one tensor started
one _native.enqueue, a group one enqueue of all its tensors, and the
optimizer's gradients one _native.enqueue_each. Process sets, Adasum, the
deprecated `average`, prescale and postscale, staging and the device route
are decided on the way to those calls, never by another one."""

import operator

import torch

from horovod.common import _capi
from horovod.common import basics as _basics
from horovod.common import collective as _collective
from horovod.common.basics import (
    Adasum, Average, is_homogeneous, local_size, nccl_built, size)
from horovod.common.process_sets import global_process_set
from horovod.common.util import get_average_backwards_compatibility_fun
from horovod.torch import _device_path
from horovod.torch import _handles
from horovod.torch import _tensors
from horovod.torch.compression import Compression
from horovod.torch._staging import back_to as _back_to
from horovod.torch._staging import check_all as _check_all
from horovod.torch._staging import host as _host
from horovod.torch._staging import writer as _writer

handle_average_backwards_compatibility = \
    get_average_backwards_compatibility_fun(_basics)

_register = _handles.register
_released = _handles.released
synchronize = _handles.synchronize
_op_name = _collective.op_name
_set_id = _collective.set_id


_native = _capi.native
_ALLREDUCE = _capi.COLL_ALLREDUCE
_CORE_OP = _basics._CORE_OP
_Tensor = torch.Tensor
_empty_like = torch.empty_like
_grad_enabled = torch.is_grad_enabled
_NAME_CACHE_LIMIT = 65536
_full_names = {"allreduce": {}, "grouped_allreduce": {}}
_single_names = _full_names["allreduce"]


def _allreduce_name(kind, name, process_set):
    """The op name (as _op_name), built once per name given: a gradient's
    recurs every step."""
    if not name:
        return _op_name(kind, None, process_set)
    names = _full_names[kind]
    full = names.get(name)
    if full is None:
        if len(names) >= _NAME_CACHE_LIMIT:
            names.clear()
        full = names[name] = f"{kind}.{name}"
    return full


def _is_power_of_2(n):
    return n > 0 and n & (n - 1) == 0


def _check_adasum(process_set, tensors):
    """Raises, at the call, the NotImplementedError Horovod raises for an
    Adasum it does not run."""
    _check_all(tensors)
    if process_set.process_set_id != 0:
        raise NotImplementedError(
            "Adasum does not support non-global process sets yet.")
    if tensors and tensors[0].device.type != "cpu" and nccl_built():
        if not is_homogeneous():
            raise NotImplementedError("Running GPU Adasum on heterogeneous "
                                      "cluster is not supported yet.")
        if not _is_power_of_2(size() // local_size()):
            raise NotImplementedError("Running GPU Adasum with non-power of "
                                      "2 nodes is not supported yet.")
    elif not _is_power_of_2(size()):
        raise NotImplementedError("Running Adasum with non-power of 2 ranks "
                                  "is not supported yet.")


def _allreduce_args(op, average, process_set, tensors):
    """(process set id, core op code) of an allreduce of `tensors` (Average
    by default), raising at the call what Horovod raises there."""
    if op is None or average is not None:
        op = handle_average_backwards_compatibility(op, average)
    try:
        code = _CORE_OP[op]
    except (KeyError, TypeError):
        code = _basics.core_op(op)  # raises, naming the ops there are
    if op == Adasum:
        _check_adasum(process_set, tensors)
    if process_set is global_process_set:
        return 0, code
    return _set_id(process_set), code


def _as_is(tensor):
    """Whether `tensor` goes to the core as it is, on no stream: a
    contiguous host tensor (the extension checks its dtype) while the fake
    device (_device_path) is off."""
    return isinstance(tensor, _Tensor) and tensor.is_cpu and \
        tensor.is_contiguous() and not _device_path._fake


def _ready(tensor):
    """`tensor` as the core reads it: itself when _as_is, else as _host
    makes it (staged, or on the device route)."""
    return tensor if _as_is(tensor) else _host(tensor)


# _allreduce_args of the global set, but for Adasum (checked at each call).
_GLOBAL_ARGS = {op: (0, code) for op, code in _CORE_OP.items()
                if op != Adasum}
_GLOBAL_ARGS[None] = _GLOBAL_ARGS[Average]


# The native calls below pass `name` as the extension's cache flag ("p":
# its truth), so that a named op's descriptor is kept, and a stream only
# for a tensor that did not go as it is.

def _allreduce_one(tensor, average, name, op, prescale_factor,
                   postscale_factor, process_set, in_place, wait):
    """allreduce of one tensor. With `wait`, allreduce(_): one native call
    that also waits (and makes the output), returning the result; a
    synchronous call needs no Horovod handle. Else allreduce_async(_),
    returning its Horovod handle. Every synchronous call and every gradient
    of a training step comes here: _allreduce_args, _as_is, _ready and
    _allreduce_name are inline."""
    args = None
    if average is None and process_set is global_process_set:
        try:
            args = _GLOBAL_ARGS.get(op)
        except TypeError:  # unhashable: _allreduce_args says what is wrong
            pass
    set_id, code = args or _allreduce_args(op, average, process_set,
                                           (tensor,))
    as_is = isinstance(tensor, _Tensor) and tensor.is_cpu and \
        tensor.is_contiguous() and not _device_path._fake
    host = tensor if as_is else _host(tensor)
    full = _single_names.get(name) or _allreduce_name("allreduce", name,
                                                      process_set)
    stream = 0 if as_is else _device_path.stream_for((host,))
    if wait:
        made = _native.run(_ALLREDUCE, full, name, set_id, code,
                           prescale_factor, postscale_factor, 0, (host,),
                           None if in_place else _empty_like, None, stream)
        if as_is:
            return tensor if in_place else made[0]
        if in_place:
            return _writer((tensor,), (host,))()[0]
        return _back_to(tensor, made[0])
    outputs = None if in_place else (_empty_like(host),)
    core = _native.enqueue(_ALLREDUCE, full, name, set_id, code,
                           prescale_factor, postscale_factor, 0, (host,),
                           outputs, None, stream)
    if in_place and as_is:
        return _register(core, tensor, None)
    return _register(core, *_allreduce_finish([tensor], [host], outputs,
                                              True))


def _allreduce_finish(tensors, hosts, outputs, single):
    """(keep, finish) for the Horovod handle of an allreduce of `tensors`
    read from `hosts` into `outputs` (None: in place)."""
    if outputs is None:
        if not any(map(operator.is_not, hosts, tensors)):
            return (tensors[0] if single else tuple(tensors)), None
        write = _writer(tensors, hosts)
        return hosts, _released(
            (lambda: write()[0]) if single else write)

    def values():
        out = tuple(_back_to(t, r) for t, r in zip(tensors, outputs))
        return out[0] if single else out

    return (hosts, outputs), _released(values)


def _allreduce_start(tensors, name, op, average, prescale_factor,
                     postscale_factor, process_set, in_place):
    """Starts one allreduce of a list of tensors, negotiated and fused as a
    unit; returns its Horovod handle, whose result is their tuple."""
    set_id, code = _allreduce_args(op, average, process_set, tensors)
    hosts = list(map(_ready, tensors))
    outputs = None if in_place else list(map(_empty_like, hosts))
    kind = "allreduce" if len(tensors) == 1 else "grouped_allreduce"
    core = _native.enqueue(_ALLREDUCE, _allreduce_name(kind, name,
                                                       process_set),
                           name, set_id, code, prescale_factor,
                           postscale_factor, 0, hosts, outputs, None,
                           _device_path.stream_for(hosts))
    return _register(core, *_allreduce_finish(tensors, hosts, outputs,
                                              False))


def _allreduce_each_async_(tensors, names, op, prescale_factor,
                           postscale_factor, process_set):
    """allreduce_async_ of each tensor under its name, started together in
    one native call when every one goes as it is (enqueue_each runs on no
    stream), else one by one; returns their handles."""
    if not all(map(_as_is, tensors)):
        return [_allreduce_one(t, None, n, op, prescale_factor,
                               postscale_factor, process_set, True, False)
                for t, n in zip(tensors, names)]
    set_id, code = _allreduce_args(op, None, process_set, tensors)
    full = [_allreduce_name("allreduce", n, process_set) for n in names]
    cores = _native.enqueue_each(_ALLREDUCE, full, all(names), set_id, code,
                                 prescale_factor, postscale_factor, 0,
                                 list(tensors), None)
    return [_register(c, t, None) for c, t in zip(cores, tensors)]


def allreduce_async(tensor, average=None, name=None, op=None,
                    prescale_factor=1.0, postscale_factor=1.0,
                    process_set=global_process_set):
    """Starts reducing `tensor` over the process set (Average by default)
    into a new tensor; returns a handle for poll() and synchronize()."""
    return _allreduce_one(tensor, average, name, op, prescale_factor,
                          postscale_factor, process_set, False, False)


def allreduce_async_(tensor, average=None, name=None, op=None,
                     prescale_factor=1.0, postscale_factor=1.0,
                     process_set=global_process_set):
    """As allreduce_async, writing the result into `tensor`."""
    return _allreduce_one(tensor, average, name, op, prescale_factor,
                          postscale_factor, process_set, True, False)


def allreduce_(tensor, average=None, name=None, op=None, prescale_factor=1.0,
               postscale_factor=1.0, process_set=global_process_set):
    """Reduces `tensor` in place over the process set and returns it."""
    return _allreduce_one(tensor, average, name, op, prescale_factor,
                          postscale_factor, process_set, True, True)


class HorovodAllreduce(torch.autograd.Function):
    """allreduce with a gradient: the allreduce of the output's gradient."""

    @staticmethod
    def forward(ctx, tensor, average, name, op, prescale_factor,
                postscale_factor, process_set):
        ctx.average = average
        ctx.op = op
        ctx.prescale_factor = prescale_factor
        ctx.postscale_factor = postscale_factor
        ctx.process_set = process_set
        return _allreduce_one(tensor, average, name, op, prescale_factor,
                              postscale_factor, process_set, False, True)

    @staticmethod
    def backward(ctx, grad_output):
        return (allreduce(grad_output, average=ctx.average, op=ctx.op,
                          prescale_factor=ctx.prescale_factor,
                          postscale_factor=ctx.postscale_factor,
                          process_set=ctx.process_set),
                None, None, None, None, None, None)


def allreduce(tensor, average=None, name=None, compression=Compression.none,
              op=None, prescale_factor=1.0, postscale_factor=1.0,
              process_set=global_process_set):
    """Reduces `tensor` over the process set (Average by default) and
    returns the result as a new tensor; differentiable."""
    if compression is Compression.none and isinstance(tensor, _Tensor) and \
            not (tensor.requires_grad and _grad_enabled()):
        # What apply() gives without a graph, minus its ~5 us.
        return _allreduce_one(tensor, average, name, op, prescale_factor,
                              postscale_factor, process_set, False, True)
    _tensors.check_dtype(tensor)
    compressed, ctx = compression.compress(tensor)
    if compressed.requires_grad and _grad_enabled():
        reduced = HorovodAllreduce.apply(compressed, average, name, op,
                                         prescale_factor, postscale_factor,
                                         process_set)
    else:
        reduced = _allreduce_one(compressed, average, name, op,
                                 prescale_factor, postscale_factor,
                                 process_set, False, True)
    return compression.decompress(reduced, ctx)


def grouped_allreduce_async(tensors, average=None, name=None, op=None,
                            prescale_factor=1.0, postscale_factor=1.0,
                            process_set=global_process_set):
    """Starts one allreduce of a list of tensors, negotiated and fused as a
    unit; synchronize() returns the tuple of results."""
    return _allreduce_start(list(tensors), name, op, average,
                            prescale_factor, postscale_factor, process_set,
                            in_place=False)


def grouped_allreduce_async_(tensors, average=None, name=None, op=None,
                             prescale_factor=1.0, postscale_factor=1.0,
                             process_set=global_process_set):
    """As grouped_allreduce_async, in place."""
    return _allreduce_start(list(tensors), name, op, average,
                            prescale_factor, postscale_factor, process_set,
                            in_place=True)


def grouped_allreduce_(tensors, average=None, name=None, op=None,
                       prescale_factor=1.0, postscale_factor=1.0,
                       process_set=global_process_set):
    return synchronize(grouped_allreduce_async_(
        tensors, average, name, op, prescale_factor, postscale_factor,
        process_set))


class HorovodGroupedAllreduce(torch.autograd.Function):

    @staticmethod
    def forward(ctx, average, name, op, prescale_factor, postscale_factor,
                process_set, *tensors):
        ctx.average = average
        ctx.op = op
        ctx.prescale_factor = prescale_factor
        ctx.postscale_factor = postscale_factor
        ctx.process_set = process_set
        return tuple(synchronize(grouped_allreduce_async(
            tensors, average, name, op, prescale_factor, postscale_factor,
            process_set)))

    @staticmethod
    def backward(ctx, *grad_outputs):
        grads = grouped_allreduce(list(grad_outputs), average=ctx.average,
                                  op=ctx.op,
                                  prescale_factor=ctx.prescale_factor,
                                  postscale_factor=ctx.postscale_factor,
                                  process_set=ctx.process_set)
        return (None,) * 6 + tuple(grads)


def grouped_allreduce(tensors, average=None, name=None,
                      compression=Compression.none, op=None,
                      prescale_factor=1.0, postscale_factor=1.0,
                      process_set=global_process_set):
    """Reduces a list of tensors as one unit; returns the list of results;
    differentiable."""
    _check_all(tensors)
    pairs = [compression.compress(t) for t in tensors]
    reduced = HorovodGroupedAllreduce.apply(
        average, name, op, prescale_factor, postscale_factor, process_set,
        *[p[0] for p in pairs])
    return [compression.decompress(r, p[1]) for r, p in zip(reduced, pairs)]
