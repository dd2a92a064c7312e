"""horovod.tensorflow.keras (also horovod.keras): Horovod's Keras API, for
the Keras the installed TensorFlow uses (Keras 3).

    import horovod.tensorflow.keras as hvd
    hvd.init()
    model.compile(optimizer=hvd.DistributedOptimizer(opt), ...)
    model.fit(..., callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0),
                              hvd.callbacks.MetricAverageCallback()])
"""

import keras
import tensorflow as tf

import horovod.tensorflow as _hvd
from horovod.tensorflow import (  # noqa: F401
    Adasum, Average, Compression, HorovodInternalError, Max, Min, Product,
    ProcessSet, Sum, add_process_set, allgather_object, alltoall, barrier,
    broadcast_object, broadcast_variables, ccl_built, cross_rank, cross_size,
    cuda_built, ddl_built, global_process_set, gloo_built, gloo_enabled,
    grouped_allreduce, init, is_homogeneous, is_initialized, join,
    local_rank, local_size, mpi_built, mpi_enabled, mpi_threads_supported,
    nccl_built, rank, remove_process_set, rocm_built, shutdown, size,
    start_timeline, stop_timeline)
from horovod.tensorflow.keras import callbacks  # noqa: F401
from horovod.tensorflow.keras import elastic  # noqa: F401
from horovod.tensorflow.keras.optimizer import (  # noqa: F401
    DistributedOptimizer, PartialDistributedOptimizer, distributed_class)


# Horovod's Keras collectives take values (numbers, arrays, tensors):
# `name` names the constant made of the value, as in Horovod.

def allreduce(value, name=None, average=None, prescale_factor=1.0,
              postscale_factor=1.0, op=None, compression=Compression.none):
    """The allreduce (Average by default) of a tensor-compatible value."""
    return _hvd.allreduce(tf.constant(value, name=name), average=average,
                          prescale_factor=prescale_factor,
                          postscale_factor=postscale_factor, op=op,
                          compression=compression)


def allgather(value, name=None):
    """Every rank's value concatenated along the first dimension."""
    return _hvd.allgather(tf.constant(value, name=name))


def broadcast(value, root_rank, name=None):
    """root_rank's value on every rank."""
    return _hvd.broadcast(tf.constant(value, name=name), root_rank)


def reducescatter(value, name=None, op=Average):
    """This rank's rows of the reduction (Average by default) of value."""
    return _hvd.reducescatter(tf.constant(value, name=name), op=op)


def broadcast_global_variables(root_rank):
    """tf.compat.v1 graph code only (as horovod.tensorflow's); eagerly,
    use BroadcastGlobalVariablesCallback or broadcast_variables."""
    return _hvd.broadcast_global_variables(root_rank)


def _optimizer_classes():
    base = keras.optimizers.Optimizer
    for name in dir(keras.optimizers):
        cls = getattr(keras.optimizers, name)
        if (isinstance(cls, type) and issubclass(cls, base) and
                cls is not base and
                not issubclass(cls, keras.optimizers.LossScaleOptimizer)):
            yield cls


def load_model(filepath, custom_optimizers=None, custom_objects=None,
               compression=Compression.none, legacy_opts=False):
    """keras.models.load_model() with the saved optimizer wrapped in
    DistributedOptimizer (its state restored). custom_optimizers: optimizer
    classes of your own to wrap as well; custom_objects as for Keras.
    legacy_opts (Horovod: tf.keras.optimizers.legacy) must stay False:
    Keras 3 has no legacy optimizers."""
    if legacy_opts:
        raise ValueError("legacy_opts=True: Keras 3 has no "
                         "keras.optimizers.legacy optimizers")
    settings = {"compression": compression}
    objects = {}
    for cls in list(_optimizer_classes()) + list(custom_optimizers or []):
        dist = distributed_class(cls)
        objects[cls.__name__] = type(cls.__name__, (dist,),
                                     {"__module__": cls.__module__,
                                      "__qualname__": cls.__qualname__,
                                      "_hvd_settings": settings})
    objects.update(custom_objects or {})
    return keras.models.load_model(filepath, custom_objects=objects)
