"""DistributedOptimizer for Keras optimizers (Keras 3, the Keras the
installed TensorFlow uses): the gradients are allreduced after Keras has
accumulated them (gradient_accumulation_steps) and before it clips them
and updates the variables, in model.fit() and in apply_gradients() alike.

The wrapped optimizer is an instance of a subclass of the optimizer's own
class, with its name and module: a model saved with it loads without
Horovod as the plain optimizer, and with horovod's load_model() wrapped.
"""

import keras

from horovod.tensorflow.compression import Compression
from horovod.tensorflow.gradient_tape import layers_variables
from horovod.tensorflow.gradients import (GradientAllreducer, LocalVariables,
                                          resolve_groups)
from horovod.tensorflow.mpi_ops import Average, global_process_set


class _Pending:
    """The variables of the gradients being applied. Held outside the
    optimizer's attributes: Keras tracks variables assigned to those as
    the optimizer's own (and would save them with it)."""

    variables = None


class _DistributedMixin:
    """What the distributed subclass adds to a Keras optimizer class."""

    # The settings from_config() gives an instance (load_model passes its
    # compression through a subclass that overrides them).
    _hvd_settings = {}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        optimizer = super().from_config(config, custom_objects=custom_objects)
        optimizer._hvd_configure(**cls._hvd_settings)
        return optimizer

    def _hvd_configure(self, device_dense='', device_sparse='',
                       compression=Compression.none, sparse_as_dense=False,
                       gradient_predivide_factor=1.0, op=Average,
                       groups=None, process_set=global_process_set,
                       postscale_factor=1.0, scale_local_gradients=True):
        self._hvd_allreducer = GradientAllreducer(
            "Distributed" + type(self).__name__, device_dense,
            device_sparse, compression, sparse_as_dense, op,
            gradient_predivide_factor, groups, process_set,
            postscale_factor=postscale_factor)
        self._hvd_local = LocalVariables(process_set, scale_local_gradients)
        self._hvd_pending = _Pending()

    def register_local_var(self, var):
        """Registers a variable as local to this rank: its gradient is not
        allreduced (and is divided by the set size when
        scale_local_gradients)."""
        self._hvd_local.register(var)

    def _backend_apply_gradients(self, grads, trainable_variables):
        # The variables of the gradients _clip_gradients() will see (after
        # Keras dropped those without a gradient).
        self._hvd_pending.variables = list(trainable_variables)
        try:
            return super()._backend_apply_gradients(grads,
                                                    trainable_variables)
        finally:
            self._hvd_pending.variables = None

    def _clip_gradients(self, grads):
        # Called once per update, on the gradients about to be applied
        # (accumulated ones on an accumulation step's update).
        grads = self._hvd_local.reduce(self._hvd_allreducer, list(grads),
                                       self._hvd_pending.variables)
        return super()._clip_gradients(grads)


_classes = {}


def distributed_class(base):
    """The subclass of Keras optimizer class `base` whose updates apply
    allreduced gradients (one per base class)."""
    if base not in _classes:
        for hook in ("_backend_apply_gradients", "_clip_gradients"):
            if not hasattr(base, hook):
                raise ValueError(
                    f"{base.__name__} (Keras {keras.__version__}) has no "
                    f"{hook}(): horovod.tensorflow.keras needs Keras 3")
        _classes[base] = type(base.__name__, (_DistributedMixin, base),
                              {"__module__": base.__module__,
                               "__qualname__": base.__qualname__})
    return _classes[base]


def DistributedOptimizer(optimizer, name=None, device_dense='',
                         device_sparse='', compression=Compression.none,
                         sparse_as_dense=False, gradient_predivide_factor=1.0,
                         op=Average, backward_passes_per_step=1,
                         average_aggregated_gradients=False, num_groups=0,
                         groups=None, process_set=global_process_set,
                         scale_local_gradients=True):
    """A copy of a Keras optimizer (same class, same configuration, fresh
    state) that applies gradients allreduced over process_set.

    op: hvd.Average (default), Sum or Adasum. compression:
    Compression.none or Compression.fp16. sparse_as_dense: allreduce
    tf.IndexedSlices gradients dense instead of allgathering them.
    gradient_predivide_factor (Average only): gradients scaled by 1 / factor
    before the sum and by factor / size after it.
    backward_passes_per_step: gradients of that many batches are summed
    locally (Keras' gradient_accumulation_steps) and allreduced once, then
    applied; average_aggregated_gradients divides that sum by the count.
    groups: an int (that many fused groups) or a list of lists of variables
    (one grouped allreduce each); num_groups is its deprecated name.
    Variables registered with register_local_var() keep their local
    gradient, divided by the set size when scale_local_gradients.
    """
    if not isinstance(optimizer, keras.optimizers.Optimizer):
        raise ValueError(f"not a Keras optimizer: {optimizer!r}")
    if isinstance(optimizer, keras.optimizers.LossScaleOptimizer):
        raise ValueError("wrap the inner optimizer of a LossScaleOptimizer "
                         "(its gradients are allreduced after unscaling)")
    groups = resolve_groups(num_groups, groups)
    config = optimizer.get_config()
    if name is not None:
        config["name"] = name
    postscale = 1.0
    if backward_passes_per_step > 1:
        if config.get("gradient_accumulation_steps"):
            raise ValueError("pass backward_passes_per_step or the "
                             "optimizer's gradient_accumulation_steps, not "
                             "both")
        config["gradient_accumulation_steps"] = backward_passes_per_step
        # Keras averages the accumulated gradients; Horovod's default sums.
        if not average_aggregated_gradients:
            postscale = float(backward_passes_per_step)
    cls = distributed_class(type(optimizer))
    wrapped = cls.from_config(config)
    wrapped._hvd_configure(device_dense, device_sparse, compression,
                           sparse_as_dense, gradient_predivide_factor, op,
                           groups, process_set, postscale_factor=postscale,
                           scale_local_gradients=scale_local_gradients)
    return wrapped


def PartialDistributedOptimizer(optimizer, name=None, device_dense='',
                                device_sparse='',
                                compression=Compression.none,
                                sparse_as_dense=False,
                                gradient_predivide_factor=1.0, op=Average,
                                backward_passes_per_step=1,
                                average_aggregated_gradients=False,
                                groups=None, process_set=global_process_set,
                                local_layers=None,
                                scale_local_gradients=True):
    """DistributedOptimizer with the trainable variables of local_layers (a
    Keras layer or a collection of them) registered as local variables
    (model parallelism: their gradients are not allreduced)."""
    local_variables = layers_variables(local_layers)
    wrapped = DistributedOptimizer(
        optimizer, name=name, device_dense=device_dense,
        device_sparse=device_sparse, compression=compression,
        sparse_as_dense=sparse_as_dense,
        gradient_predivide_factor=gradient_predivide_factor, op=op,
        backward_passes_per_step=backward_passes_per_step,
        average_aggregated_gradients=average_aggregated_gradients,
        groups=groups, process_set=process_set,
        scale_local_gradients=scale_local_gradients)
    for v in local_variables:
        wrapped.register_local_var(v)
    return wrapped
