"""The reductions of horovod.tensorflow over the low-level ops of mpi_ops:
compression, tf.IndexedSlices (gathered, as Horovod does) and the
deprecated `average` argument. allgather, broadcast and alltoall are
mpi_ops' own."""

import tensorflow as tf

from horovod.tensorflow import mpi_ops
from horovod.tensorflow.compression import Compression
from horovod.tensorflow.mpi_ops import (  # noqa: F401
    Adasum, Average, Sum, global_process_set,
    handle_average_backwards_compatibility)


def _set_size(process_set):
    size = process_set.size()
    if size is None:
        raise ValueError(f"{process_set} is not registered: pass it to "
                         f"hvd.init(process_sets=...) or add_process_set()")
    return size


def _check_sparse_reduction(op, prescale_factor, postscale_factor):
    """What Horovod refuses for tf.IndexedSlices, refused before any
    collective starts (so no rank waits for one that never comes)."""
    if op == Adasum:
        raise NotImplementedError(
            "The Adasum reduction does not currently support sparse tensors. "
            "As a workaround please pass sparse_as_dense=True to "
            "DistributedOptimizer")
    if op not in (Average, Sum):
        raise NotImplementedError(
            "Only Sum and Average ops are supported with tf.IndexedSlices")
    if prescale_factor != 1.0 or postscale_factor != 1.0:
        raise NotImplementedError(
            "Pre/postscale_factor are not supported with tf.IndexedSlices")


def _gathered_slices(slices, op, name, process_set, ignore_name_scope):
    """The allreduce of a tf.IndexedSlices as two allgathers (values and
    indices): the slices of every rank, duplicates summed when densified.
    Average divides the values by the set size as Horovod does (true
    division: integer values become floating point)."""
    values_name = None if name is None else name + ".values"
    indices_name = None if name is None else name + ".indices"
    values = mpi_ops.allgather(slices.values, name=values_name,
                               ignore_name_scope=ignore_name_scope,
                               process_set=process_set)
    indices = mpi_ops.allgather(slices.indices, name=indices_name,
                                ignore_name_scope=ignore_name_scope,
                                process_set=process_set)
    if op == Average:
        values = values / tf.cast(_set_size(process_set), values.dtype)
    return tf.IndexedSlices(values, indices, dense_shape=slices.dense_shape)


def allreduce(tensor, average=None, device_dense='', device_sparse='',
              compression=Compression.none, op=None, prescale_factor=1.0,
              postscale_factor=1.0, name=None,
              process_set=global_process_set, ignore_name_scope=False):
    """Reduces a tf.Tensor, tf.Variable or tf.IndexedSlices over the ranks
    of process_set (all of them by default).

    op: hvd.Average (the default), Sum, Min, Max, Product or Adasum.
    The input is multiplied by prescale_factor before the reduction and the
    result by postscale_factor after it. A tf.IndexedSlices is allgathered
    (values and indices), which is its allreduce; densify it first
    (tf.convert_to_tensor) to reduce it as a dense tensor; its Average
    divides the gathered values by the set size (integer values become
    floating point, as in Horovod), and it takes no scale factors
    (NotImplementedError). Returns a tensor of the input's shape and dtype.
    """
    op = handle_average_backwards_compatibility(op, average)
    if isinstance(tensor, tf.IndexedSlices):
        _check_sparse_reduction(op, prescale_factor, postscale_factor)
        with tf.device(device_sparse):
            return _gathered_slices(tensor, op, name, process_set,
                                    ignore_name_scope)
    with tf.device(device_dense):
        compressed, ctx = compression.compress(tf.convert_to_tensor(tensor))
        reduced = mpi_ops._allreduce(compressed, name=name, op=op,
                                     prescale_factor=prescale_factor,
                                     postscale_factor=postscale_factor,
                                     ignore_name_scope=ignore_name_scope,
                                     process_set=process_set)
        return compression.decompress(reduced, ctx)


def grouped_allreduce(tensors, average=None, device_dense='',
                      device_sparse='', compression=Compression.none,
                      op=None, prescale_factor=1.0, postscale_factor=1.0,
                      process_set=global_process_set,
                      ignore_name_scope=False, name=None):
    """allreduce() of a list of tensors as one unit: the runtime negotiates
    and fuses them together. tf.IndexedSlices in the list are gathered one
    by one, as allreduce() does. Returns the list of results in order."""
    if not tensors:
        return tensors
    op = handle_average_backwards_compatibility(op, average)
    results = list(tensors)
    dense = [i for i, t in enumerate(tensors)
             if not isinstance(t, tf.IndexedSlices)]
    if len(dense) < len(tensors):
        _check_sparse_reduction(op, prescale_factor, postscale_factor)
    for i, t in enumerate(tensors):
        if isinstance(t, tf.IndexedSlices):
            slice_name = None if name is None else f"{name}.{i}"
            with tf.device(device_sparse):
                results[i] = _gathered_slices(t, op, slice_name, process_set,
                                              ignore_name_scope)
    if not dense:
        return results
    with tf.device(device_dense):
        compressed, ctxs = zip(*[
            compression.compress(tf.convert_to_tensor(tensors[i]))
            for i in dense])
        reduced = mpi_ops._grouped_allreduce(
            list(compressed), name=name, op=op,
            prescale_factor=prescale_factor,
            postscale_factor=postscale_factor,
            ignore_name_scope=ignore_name_scope, process_set=process_set)
        for i, out, ctx in zip(dense, reduced, ctxs):
            results[i] = compression.decompress(out, ctx)
    return results


def reducescatter(tensor, device_dense='', compression=Compression.none,
                  op=Average, name=None, process_set=global_process_set,
                  ignore_name_scope=False, prescale_factor=1.0,
                  postscale_factor=1.0):
    """Reduces tensor over the ranks (op: hvd.Average or Sum) and returns
    this rank's part of the result: the first dimension split over the
    ranks, the first ranks getting one row more when it does not divide."""
    with tf.device(device_dense):
        compressed, ctx = compression.compress(tf.convert_to_tensor(tensor))
        reduced = mpi_ops._reducescatter(compressed, name=name, op=op,
                                        prescale_factor=prescale_factor,
                                        postscale_factor=postscale_factor,
                                        ignore_name_scope=ignore_name_scope,
                                        process_set=process_set)
        return compression.decompress(reduced, ctx)


def grouped_reducescatter(tensors, device_dense='',
                          compression=Compression.none, op=Average,
                          process_set=global_process_set, prescale_factor=1.0,
                          postscale_factor=1.0, ignore_name_scope=False,
                          name=None):
    """reducescatter() of a list of tensors (one dtype) as one unit."""
    if not tensors:
        return tensors
    with tf.device(device_dense):
        compressed, ctxs = zip(*[compression.compress(tf.convert_to_tensor(t))
                                 for t in tensors])
        reduced = mpi_ops._grouped_reducescatter(
            list(compressed), name=name, op=op,
            prescale_factor=prescale_factor,
            postscale_factor=postscale_factor,
            ignore_name_scope=ignore_name_scope, process_set=process_set)
        return [compression.decompress(out, ctx)
                for out, ctx in zip(reduced, ctxs)]
