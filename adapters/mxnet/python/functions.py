"""Broadcast of model parameters, and collectives on Python objects."""

import types

import mxnet as mx
import numpy as np

from horovod.common import objects as _objects
from horovod.mxnet.mpi_ops import (allgather, broadcast_, global_process_set,
                                   rank, size)


def _parameter_types():
    try:
        from mxnet.gluon.parameter import ParameterDict
    except ImportError:  # MXNet 2 has none
        return (dict,)
    return (dict, ParameterDict)


def _broadcast_after_init(param, root_rank, name):
    """Makes a deferred-initialised Parameter broadcast its value once MXNet
    initialises it (at the first forward pass)."""
    init_impl = param._init_impl

    def init_then_broadcast(self, *args, **kwargs):
        init_impl(*args, **kwargs)
        _broadcast_parameter(self, root_rank, name)

    param._init_impl = types.MethodType(init_then_broadcast, param)


def _broadcast_parameter(param, root_rank, name):
    data = broadcast_(param.data(), root_rank, name=name)
    if len(param.list_ctx()) > 1:
        param.set_data(data)


def broadcast_parameters(params, root_rank=0, prefix=None):
    """Broadcasts parameters from root_rank to every rank, in place.

    params: a dict of NDArrays or of gluon Parameters (``get_params()``'s
    dicts), or a gluon ``ParameterDict`` (``net.collect_params()``). A
    Parameter whose initialisation is deferred is broadcast when MXNet
    initialises it. prefix: prepended to each name, to keep the names of
    several calls apart.
    """
    if prefix is not None and not isinstance(prefix, str):
        raise ValueError(f"prefix must be a string, not {type(prefix).__name__}")
    if not isinstance(params, _parameter_types()):
        raise ValueError('invalid params of type: %s' % type(params))
    if size() == 1:
        return
    prefix = prefix or ""
    for key, p in sorted(params.items()):
        name = prefix + str(key)
        if isinstance(p, mx.gluon.Parameter):
            try:
                _broadcast_parameter(p, root_rank, name)
            except mx.gluon.parameter.DeferredInitializationError:
                _broadcast_after_init(p, root_rank, name)
        else:
            broadcast_(p, root_rank, name=name)


def _serialize(obj):
    return mx.nd.array(np.frombuffer(_objects.serialize(obj), dtype=np.uint8),
                       dtype=np.uint8)


def _rank_in(process_set):
    if process_set is global_process_set or process_set.process_set_id == 0:
        return rank()
    return process_set.rank()


def broadcast_object(obj, root_rank=0, name=None,
                     process_set=global_process_set):
    """Pickles obj on root_rank and returns the root's object on every rank
    of the set. name, if given, must be the same on every rank (by default
    one fixed name: Horovod's default, the object's type name, hangs when
    only the root passes a real object)."""
    if name is None:
        name = 'broadcast_object'
    is_root = _rank_in(process_set) == root_rank
    if is_root:
        payload = _serialize(obj)
        length = mx.nd.array([payload.size], dtype=np.int64)
    else:
        length = mx.nd.zeros((1,), dtype=np.int64)
    broadcast_(length, root_rank, name + '.sz', process_set=process_set)
    if not is_root:
        payload = mx.nd.zeros((int(length.asscalar()),), dtype=np.uint8)
    broadcast_(payload, root_rank, name + '.t', process_set=process_set)
    if is_root:
        return obj
    return _objects.deserialize(payload.asnumpy().tobytes())


def allgather_object(obj, name=None, process_set=global_process_set):
    """Pickles obj on every rank of the set; returns the list of all ranks'
    objects, in rank order."""
    if name is None:
        name = 'allgather_object'
    payload = _serialize(obj)
    length = mx.nd.array([payload.size], dtype=np.int64)
    lengths = allgather(length, name=name + '.sz', process_set=process_set)
    gathered = allgather(payload, name=name + '.t', process_set=process_set)
    return _objects.split_gathered(gathered.asnumpy().tobytes(),
                                   [int(n) for n in lengths.asnumpy()])
