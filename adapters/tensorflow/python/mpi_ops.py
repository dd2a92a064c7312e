"""Horovod's collective ops as TensorFlow ops (Horovod 0.28's low-level
surface), from the op library libhorovod_tensorflow.so.

The kernels are asynchronous: they hand each op to the core (the same
runtime horovod.torch uses in this process) and return; the core's
completion ends the TensorFlow op. They work eagerly and inside tf.function
graphs, where ops are matched across ranks by their node names (derived
from the input's name as Horovod does), whatever order TensorFlow runs them
in. Ranks that disagree about an op (shape, dtype, reduction, root) fail it
on every rank with tf.errors.FailedPreconditionError naming the tensor.
"""

import os
import re

import tensorflow as tf

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
from horovod.common.process_sets import (  # noqa: F401
    ProcessSet, add_process_set, global_process_set, remove_process_set)
from horovod.common.util import get_average_backwards_compatibility_fun
from horovod.tensorflow.util import _as_tf_variable, _executing_eagerly

LIBRARY_PATH = os.path.join(_capi.lib_dir(), "libhorovod_tensorflow.so")


def _load_library():
    if not os.path.exists(LIBRARY_PATH):
        raise ImportError(
            f"horovod.tensorflow: {LIBRARY_PATH} is missing: this horovod "
            f"was built without TensorFlow (python3 could not import "
            f"tensorflow when it was built); rebuild it where it can")
    try:
        return tf.load_op_library(LIBRARY_PATH)
    except tf.errors.NotFoundError as e:
        raise ImportError(
            f"horovod.tensorflow: {LIBRARY_PATH} does not load into "
            f"TensorFlow {tf.__version__}: {e}") from e


MPI_LIB = _load_library()

handle_average_backwards_compatibility = \
    get_average_backwards_compatibility_fun(_basics)


def check_num_rank_power_of_2(num_rank):
    """Whether num_rank is a power of 2 (Adasum's requirement)."""
    return num_rank != 0 and (num_rank & (num_rank - 1)) == 0


def _normalize_name(name):
    """Normalizes an op name to TensorFlow's rules."""
    return re.sub('[^a-zA-Z0-9_]', '_', name)


def _set_id(process_set):
    if not isinstance(process_set, ProcessSet):
        raise ValueError(f"process_set must be a ProcessSet, not "
                         f"{type(process_set).__name__}")
    if process_set.process_set_id is None:
        raise ValueError(f"{process_set} is not registered: pass it to "
                         f"hvd.init(process_sets=...) or add_process_set()")
    return process_set.process_set_id


def _temp_process_set_object(process_set_id):
    """The registered ProcessSet of an id (gradients read ids from ops)."""
    ps = _process_sets._registered.get(process_set_id)
    if ps is None:
        raise ValueError(f"process set {process_set_id} is not registered")
    return ps


def _default_name(kind, tensors):
    """Horovod's graph-mode name of an op: from its inputs' names, so every
    rank tracing the same code names the op alike. None eagerly (the
    kernel then uses the op's own name)."""
    if _executing_eagerly():
        return None
    if len(tensors) == 1:
        return f"{kind}_{_normalize_name(tensors[0].name)}"
    return _normalize_name(f"{kind}_{tensors[0].name}_{tensors[-1].name}")


def _negotiated_shape(output, tensor):
    """Graph mode: the static shape of an output whose first dimension the
    ranks negotiate."""
    if not _executing_eagerly() and tensor.shape.rank is not None:
        output.set_shape([None] + tensor.shape.as_list()[1:])
    return output


# ---- allreduce ------------------------------------------------------------

def _allreduce(tensor, name=None, op=Sum, prescale_factor=1.0,
               postscale_factor=1.0, ignore_name_scope=False,
               process_set=global_process_set):
    """Reduces `tensor` over the process set (a sum by default); the result
    has its shape and dtype."""
    if name is None:
        name = _default_name("HorovodAllreduce", [tensor])
    return MPI_LIB.horovod_allreduce(
        tensor, name=name, reduce_op=op, prescale_factor=prescale_factor,
        postscale_factor=postscale_factor,
        ignore_name_scope=ignore_name_scope,
        process_set_id=_set_id(process_set))


@tf.RegisterGradient('HorovodAllreduce')
def _allreduce_grad(op, grad):
    """The gradient of an allreduce: the same allreduce of the gradient."""
    return _allreduce(grad, op=op.get_attr('reduce_op'),
                      prescale_factor=op.get_attr('prescale_factor'),
                      postscale_factor=op.get_attr('postscale_factor'),
                      ignore_name_scope=op.get_attr('ignore_name_scope'),
                      process_set=_temp_process_set_object(
                          op.get_attr('process_set_id')))


def _grouped_allreduce(tensors, name=None, op=Sum, prescale_factor=1.0,
                       postscale_factor=1.0, ignore_name_scope=False,
                       process_set=global_process_set):
    """Reduces a list of tensors (one dtype) as one negotiated, fused
    unit; returns the list of results."""
    tensors = list(tensors)
    if name is None:
        name = _default_name("HorovodGroupedAllreduce", tensors)
    return MPI_LIB.horovod_grouped_allreduce(
        tensors, name=name, reduce_op=op, prescale_factor=prescale_factor,
        postscale_factor=postscale_factor,
        ignore_name_scope=ignore_name_scope,
        process_set_id=_set_id(process_set))


@tf.RegisterGradient('HorovodGroupedAllreduce')
def _grouped_allreduce_grad(op, *grads):
    return _grouped_allreduce(
        list(grads), op=op.get_attr('reduce_op'),
        prescale_factor=op.get_attr('prescale_factor'),
        postscale_factor=op.get_attr('postscale_factor'),
        ignore_name_scope=op.get_attr('ignore_name_scope'),
        process_set=_temp_process_set_object(op.get_attr('process_set_id')))


# ---- allgather ------------------------------------------------------------

def allgather(tensor, name=None, ignore_name_scope=False,
              process_set=global_process_set):
    """Concatenates `tensor` from every rank of the process set along the
    first dimension (which may differ between ranks)."""
    if name is None:
        name = _default_name("HorovodAllgather", [tensor])
    out = MPI_LIB.horovod_allgather(tensor, name=name,
                                    ignore_name_scope=ignore_name_scope,
                                    process_set_id=_set_id(process_set))
    return _negotiated_shape(out, tensor)


def _rows_of_every_rank(x, ignore_name_scope, process_set):
    """Every rank's first dimension of `x`, in rank order."""
    with tf.device('/cpu:0'):
        rows = tf.reshape(tf.shape(x)[0], [1])
        return tf.reshape(allgather(rows, ignore_name_scope=ignore_name_scope,
                                    process_set=process_set),
                          [process_set.size()])


def _my_rows(grad, x, ignore_name_scope, process_set):
    splits = tf.split(grad, _rows_of_every_rank(x, ignore_name_scope,
                                                process_set), axis=0)
    return splits[process_set.rank()]


@tf.RegisterGradient('HorovodAllgather')
def _allgather_grad(op, grad):
    """The gradient of an allgather: this rank's rows of the averaged
    gradient (as Horovod's)."""
    ignore_name_scope = op.get_attr('ignore_name_scope')
    ps = _temp_process_set_object(op.get_attr('process_set_id'))
    grad = _allreduce(grad, op=Average, ignore_name_scope=ignore_name_scope,
                      process_set=ps)
    return _my_rows(grad, op.inputs[0], ignore_name_scope, ps)


def grouped_allgather(tensors, name=None, ignore_name_scope=False,
                      process_set=global_process_set):
    """allgather of a list of tensors as one negotiated unit."""
    tensors = list(tensors)
    if name is None:
        name = _default_name("HorovodGroupedAllgather", tensors)
    outs = MPI_LIB.horovod_grouped_allgather(
        tensors, name=name, ignore_name_scope=ignore_name_scope,
        process_set_id=_set_id(process_set))
    return [_negotiated_shape(o, t) for o, t in zip(outs, tensors)]


@tf.RegisterGradient('HorovodGroupedAllgather')
def _grouped_allgather_grad(op, *grads):
    ignore_name_scope = op.get_attr('ignore_name_scope')
    ps = _temp_process_set_object(op.get_attr('process_set_id'))
    # One allreduce each: TensorFlow may hand float32 zeros for some.
    return [_my_rows(_allreduce(g, op=Average,
                                ignore_name_scope=ignore_name_scope,
                                process_set=ps),
                     x, ignore_name_scope, ps)
            for g, x in zip(grads, op.inputs)]


# ---- broadcast ------------------------------------------------------------

def broadcast(tensor, root_rank, name=None, ignore_name_scope=False,
              process_set=global_process_set):
    """root_rank's `tensor` on every rank of the process set; root_rank is
    a global rank (a member of the set), as in Horovod."""
    if name is None:
        name = _default_name("HorovodBroadcast", [tensor])
    root_in_set = _process_sets.root_in_set(process_set, root_rank)
    return MPI_LIB.horovod_broadcast(tensor, name=name, root_rank=root_in_set,
                                     ignore_name_scope=ignore_name_scope,
                                     process_set_id=_set_id(process_set))


@tf.RegisterGradient('HorovodBroadcast')
def _broadcast_grad(op, grad):
    """The gradient of a broadcast: the averaged gradient on the root, zero
    elsewhere (as Horovod's). The op's root_rank is the root's rank in the
    set (broadcast() translated Horovod's global rank)."""
    root_in_set = op.get_attr('root_rank')
    ps = _temp_process_set_object(op.get_attr('process_set_id'))
    grad_reduced = _allreduce(
        grad, op=Average, ignore_name_scope=op.get_attr('ignore_name_scope'),
        process_set=ps)
    # The same ops on every rank, so later ops get the same names on all.
    on_root = 1 if ps.rank() == root_in_set else 0
    return grad_reduced * tf.constant(on_root, grad_reduced.dtype)


_inplace_broadcasts = {}


def _inplace_broadcast_fn(root_rank, name, process_set):
    """The tf.function assigning root_rank's values to a list of variables
    (one per root, name and set): eagerly, every broadcast in flight at
    once."""
    key = (root_rank, name, process_set.process_set_id)
    if key not in _inplace_broadcasts:
        @tf.function
        def assign_all(variables):
            _assign_broadcasts(variables, root_rank, name, process_set)
        _inplace_broadcasts[key] = assign_all
    return _inplace_broadcasts[key]


def _assign_broadcasts(variables, root_rank, name, process_set):
    return [v.assign(broadcast(
        v, root_rank, process_set=process_set,
        name=None if name is None else _normalize_name(f"{name}_{v.name}")))
        for v in variables]


def broadcast_(variables, root_rank, name=None,
               process_set=global_process_set):
    """Broadcasts variables in place: every rank of the set gets root_rank's
    values assigned. Returns the variables' new values. name, if given,
    names the broadcasts (with each variable's name), the same on every
    rank."""
    variables = [_as_tf_variable(v) for v in variables]
    for v in variables:
        if not isinstance(v, tf.Variable):
            raise ValueError(f"broadcast_() assigns variables; got "
                             f"{type(v).__name__}")
    if _executing_eagerly():
        if variables:
            _inplace_broadcast_fn(root_rank, name, process_set)(variables)
        return [v.read_value() for v in variables]
    assigned = _assign_broadcasts(variables, root_rank, name, process_set)
    with tf.control_dependencies(assigned):
        return [v.read_value() for v in variables]


# ---- alltoall -------------------------------------------------------------

def alltoall(tensor, splits=None, name=None, ignore_name_scope=False,
             process_set=global_process_set):
    """Sends splits[i] rows of `tensor` to rank i of the process set (equal
    parts when splits is None) and concatenates what each rank sent here.
    Returns the output and, when `splits` is given, the rows received from
    each rank."""
    if splits is None:
        splits_ = tf.constant([], dtype=tf.int32)
    else:
        splits_ = tf.cast(tf.convert_to_tensor(splits), tf.int32)
    if name is None:
        name = _default_name("HorovodAlltoall", [tensor])
    output, received = MPI_LIB.horovod_alltoall(
        tensor, splits=splits_, name=name,
        ignore_name_scope=ignore_name_scope,
        process_set_id=_set_id(process_set))
    output = _negotiated_shape(output, tensor)
    if not _executing_eagerly():
        received.set_shape([None])
    return (output, received) if splits is not None else output


@tf.RegisterGradient('HorovodAlltoall')
def _alltoall_grad(op, grad_wrt_output, grad_wrt_received_splits):
    """The gradient of an alltoall: the gradient sent back the way it
    came."""
    grad, _ = alltoall(grad_wrt_output, splits=op.outputs[1],
                       ignore_name_scope=op.get_attr('ignore_name_scope'),
                       process_set=_temp_process_set_object(
                           op.get_attr('process_set_id')))
    return [grad, None]


# ---- reducescatter --------------------------------------------------------

def _reducescatter(tensor, name=None, op=Sum, ignore_name_scope=False,
                   process_set=global_process_set, prescale_factor=1.0,
                   postscale_factor=1.0):
    """Reduces `tensor` over the process set (a sum by default) and returns
    this rank's rows of the first dimension (rows / size each, one more on
    the first rows % size ranks)."""
    _basics.check_reducescatter_op(op)
    if name is None:
        name = _default_name("HorovodReducescatter", [tensor])
    out = MPI_LIB.horovod_reducescatter(
        tensor, name=name, reduce_op=op, prescale_factor=prescale_factor,
        postscale_factor=postscale_factor,
        ignore_name_scope=ignore_name_scope,
        process_set_id=_set_id(process_set))
    return _negotiated_shape(out, tensor)


def _reducescatter_grad_scaled(op, grad, ps):
    """The output gradient scaled as Horovod's reducescatter gradient does:
    by the set size for Sum, then by each scale factor, one at a time."""
    if op.get_attr('reduce_op') == Sum:
        grad = grad * tf.cast(ps.size(), grad.dtype)
    for attr in ('prescale_factor', 'postscale_factor'):
        factor = op.get_attr(attr)
        if factor != 1.0:
            grad = grad * tf.cast(factor, grad.dtype)
    return grad


@tf.RegisterGradient('HorovodReducescatter')
def _reducescatter_grad(op, grad):
    """The gradient of a reducescatter: the allgather of the scaled
    gradients."""
    ps = _temp_process_set_object(op.get_attr('process_set_id'))
    return allgather(_reducescatter_grad_scaled(op, grad, ps),
                     ignore_name_scope=op.get_attr('ignore_name_scope'),
                     process_set=ps)


def _grouped_reducescatter(tensors, name=None, op=Sum,
                           ignore_name_scope=False,
                           process_set=global_process_set,
                           prescale_factor=1.0, postscale_factor=1.0):
    """_reducescatter of a list of tensors as one negotiated unit."""
    _basics.check_reducescatter_op(op)
    tensors = list(tensors)
    if name is None:
        name = _default_name("HorovodGroupedReducescatter", tensors)
    outs = MPI_LIB.horovod_grouped_reducescatter(
        tensors, name=name, reduce_op=op, prescale_factor=prescale_factor,
        postscale_factor=postscale_factor,
        ignore_name_scope=ignore_name_scope,
        process_set_id=_set_id(process_set))
    return [_negotiated_shape(o, t) for o, t in zip(outs, tensors)]


@tf.RegisterGradient('HorovodGroupedReducescatter')
def _grouped_reducescatter_grad(op, *grads):
    ps = _temp_process_set_object(op.get_attr('process_set_id'))
    ignore_name_scope = op.get_attr('ignore_name_scope')
    # One allgather each: TensorFlow may hand float32 zeros for some.
    return [allgather(_reducescatter_grad_scaled(op, g, ps),
                      ignore_name_scope=ignore_name_scope, process_set=ps)
            for g in grads]


# ---- join, barrier --------------------------------------------------------

# Eagerly, they wait through horovod.common (interruptible by Ctrl-C, as a
# TensorFlow op's wait inside TFE_Execute is not); in a graph they are ops.

def join():
    """Declares that this rank has no more data: until every rank has
    joined, the others' allreduces run with this rank contributing zeros.
    Returns an int32 scalar: the last rank to join."""
    if _executing_eagerly():
        return tf.constant(_collective.join(), dtype=tf.int32)
    return MPI_LIB.horovod_join()


def barrier(process_set=global_process_set):
    """Returns (eagerly) or completes (as an op in a graph) once every rank
    of the process set has reached it."""
    if _executing_eagerly():
        return _collective.barrier(process_set)
    return MPI_LIB.horovod_barrier(process_set_id=_set_id(process_set))


tf.no_gradient('HorovodJoin')


# ---- the job's layout, read when the graph runs ----------------------------

def size_op(process_set_id=0, name=None):
    """An int32 scalar op: the number of ranks of the process set."""
    return MPI_LIB.horovod_size(process_set_id=process_set_id, name=name)


def local_size_op(name=None):
    """An int32 scalar op: the number of ranks on this host."""
    return MPI_LIB.horovod_local_size(name=name)


def rank_op(name=None):
    """An int32 scalar op: this process's rank."""
    return MPI_LIB.horovod_rank(name=name)


def local_rank_op(name=None):
    """An int32 scalar op: this process's rank among those of its host."""
    return MPI_LIB.horovod_local_rank(name=name)


def process_set_included_op(process_set_id=0, name=None):
    """An int32 scalar op: 1 when this process belongs to the process set,
    0 when not."""
    return MPI_LIB.horovod_process_set_included(
        process_set_id=process_set_id, name=name)


for _op in ('HorovodSize', 'HorovodLocalSize', 'HorovodRank',
            'HorovodLocalRank', 'HorovodProcessSetIncluded'):
    tf.no_gradient(_op)
del _op
