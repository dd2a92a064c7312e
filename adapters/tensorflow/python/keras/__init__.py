"""horovod.tensorflow.keras (also horovod.keras): Horovod's Keras API, for
the Keras the installed TensorFlow uses (Keras 3).

    import horovod.tensorflow.keras as hvd
    hvd.init()
    model.compile(optimizer=hvd.DistributedOptimizer(opt), ...)
    model.fit(..., callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0),
                              hvd.callbacks.MetricAverageCallback()])
"""

import keras

from horovod.tensorflow import (  # noqa: F401
    Adasum, Average, Compression, HorovodInternalError, Max, Min, Product,
    ProcessSet, Sum, add_process_set, allgather, allgather_object,
    allreduce, alltoall, barrier, broadcast, broadcast_object,
    broadcast_variables, cross_rank, cross_size, global_process_set,
    gloo_built, gloo_enabled, grouped_allreduce, init, is_homogeneous,
    is_initialized, join, local_rank, local_size, mpi_built, mpi_enabled,
    mpi_threads_supported, nccl_built, rank, reducescatter,
    remove_process_set, shutdown, size, start_timeline, stop_timeline)
from horovod.tensorflow.keras import callbacks  # noqa: F401
from horovod.tensorflow.keras.optimizer import (  # noqa: F401
    DistributedOptimizer, distributed_class)


def _optimizer_classes():
    base = keras.optimizers.Optimizer
    for name in dir(keras.optimizers):
        cls = getattr(keras.optimizers, name)
        if (isinstance(cls, type) and issubclass(cls, base) and
                cls is not base and
                not issubclass(cls, keras.optimizers.LossScaleOptimizer)):
            yield cls


def load_model(filepath, custom_optimizers=None, custom_objects=None,
               compression=Compression.none):
    """keras.models.load_model() with the saved optimizer wrapped in
    DistributedOptimizer (its state restored). custom_optimizers: optimizer
    classes of your own to wrap as well; custom_objects as for Keras."""
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
