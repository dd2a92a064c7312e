"""DistributedOptimizer for tf.compat.v1 optimizers (graph code, sessions):
compute_gradients() returns the gradients allreduced over the ranks, so
minimize() and apply_gradients() apply the average. Keras optimizers are
wrapped by horovod.tensorflow.keras.DistributedOptimizer."""

import tensorflow as tf

from horovod.tensorflow.compression import Compression
from horovod.tensorflow.gradients import (GradientAllreducer, LocalVariables,
                                          resolve_groups)
from horovod.tensorflow.mpi_ops import Adasum, Average, global_process_set

_LegacyOptimizer = tf.compat.v1.train.Optimizer


class _DistributedOptimizer(_LegacyOptimizer):
    """Wraps a tf.compat.v1.train.Optimizer, allreducing its gradients
    before they are applied."""

    def __init__(self, optimizer, name, use_locking, allreducer,
                 local_vars):
        if name is None:
            name = "Distributed{}".format(type(optimizer).__name__)
        super().__init__(name=name, use_locking=use_locking)
        self._optimizer = optimizer
        self._allreducer = allreducer
        self._local_vars = local_vars

    def register_local_var(self, var):
        """Registers a variable as local to this rank: its gradient is not
        allreduced (and is divided by the set size when
        scale_local_gradients)."""
        self._local_vars.register(var)

    def compute_gradients(self, *args, **kwargs):
        """The wrapped optimizer's compute_gradients(), each gradient
        allreduced (None gradients stay None)."""
        gradients = self._optimizer.compute_gradients(*args, **kwargs)
        if not gradients:
            return gradients
        grads, variables = zip(*gradients)
        reduced = self._local_vars.reduce(self._allreducer, list(grads),
                                          list(variables))
        return list(zip(reduced, variables))

    def apply_gradients(self, *args, **kwargs):
        return self._optimizer.apply_gradients(*args, **kwargs)

    def get_slot(self, *args, **kwargs):
        return self._optimizer.get_slot(*args, **kwargs)

    def get_slot_names(self, *args, **kwargs):
        return self._optimizer.get_slot_names(*args, **kwargs)

    def variables(self, *args, **kwargs):
        return self._optimizer.variables(*args, **kwargs)


def _is_keras_optimizer(optimizer):
    try:
        import keras
    except ImportError:
        return False
    return isinstance(optimizer, keras.optimizers.Optimizer)


def DistributedOptimizer(optimizer, name=None, use_locking=False,
                         device_dense='', device_sparse='',
                         compression=Compression.none, sparse_as_dense=False,
                         backward_passes_per_step=1, op=Average,
                         gradient_predivide_factor=1.0,
                         average_aggregated_gradients=False, num_groups=0,
                         groups=None, process_set=global_process_set,
                         scale_local_gradients=True):
    """Wraps an optimizer so that the gradients it applies are allreduced
    over process_set: a tf.compat.v1.train.Optimizer here, a Keras
    optimizer through horovod.tensorflow.keras.DistributedOptimizer.

    op: hvd.Average (default), Sum or Adasum (Adasum of the gradients).
    compression: Compression.none or Compression.fp16. sparse_as_dense:
    allreduce tf.IndexedSlices gradients as dense tensors instead of
    allgathering them. gradient_predivide_factor (Average only): gradients
    are scaled by 1 / factor before the sum and by factor / size after it.
    groups: an int (that many fused groups) or a list of lists of variables
    (one grouped allreduce each); num_groups is its deprecated name.
    backward_passes_per_step and average_aggregated_gradients: Keras
    optimizers only (local accumulation before each allreduce).
    Variables registered with register_local_var() keep their local
    gradient, divided by the set size when scale_local_gradients.
    """
    groups = resolve_groups(num_groups, groups)
    if op == Adasum and average_aggregated_gradients:
        raise ValueError("Adasum does not support "
                         "average_aggregated_gradients == True")
    if _is_keras_optimizer(optimizer):
        import horovod.tensorflow.keras as hvd_keras
        return hvd_keras.DistributedOptimizer(
            optimizer, name=name, device_dense=device_dense,
            device_sparse=device_sparse, compression=compression,
            sparse_as_dense=sparse_as_dense,
            gradient_predivide_factor=gradient_predivide_factor, op=op,
            backward_passes_per_step=backward_passes_per_step,
            average_aggregated_gradients=average_aggregated_gradients,
            groups=groups, process_set=process_set,
            scale_local_gradients=scale_local_gradients)
    if not isinstance(optimizer, _LegacyOptimizer):
        raise ValueError("Provided optimizer doesn't inherit from either "
                         "legacy TensorFlow or Keras optimizer: %s"
                         % optimizer)
    if backward_passes_per_step != 1:
        raise ValueError("backward_passes_per_step > 1 is supported for "
                         "Keras optimizers only (horovod.tensorflow.keras)")
    allreducer = GradientAllreducer(
        name or "Distributed{}".format(type(optimizer).__name__),
        device_dense, device_sparse, compression, sparse_as_dense, op,
        gradient_predivide_factor, groups, process_set)
    return _DistributedOptimizer(
        optimizer, name, use_locking, allreducer,
        LocalVariables(process_set, scale_local_gradients))
