"""horovod.tensorflow: Horovod's TensorFlow API.

    import horovod.tensorflow as hvd
    hvd.init()
    tape = hvd.DistributedGradientTape(tape)            # TensorFlow 2
    opt = hvd.DistributedOptimizer(tf.compat.v1.train.AdamOptimizer(lr))
    hooks = [hvd.BroadcastGlobalVariablesHook(0)]       # tf.compat.v1

Collectives work eagerly and inside tf.function (and tf.compat.v1 graphs);
they are TensorFlow ops (mpi_ops) over the same runtime horovod.torch uses.
Keras: horovod.tensorflow.keras.
"""

from horovod.common.basics import (  # noqa: F401
    ccl_built, cuda_built, ddl_built, gloo_built, gloo_enabled, mpi_built,
    mpi_enabled, mpi_threads_supported, nccl_built, rocm_built)
from horovod.common.exceptions import (  # noqa: F401
    HorovodInternalError, HostsUpdatedInterrupt)
from horovod.tensorflow.collectives import (  # noqa: F401
    allreduce, grouped_allreduce, grouped_reducescatter,
    handle_average_backwards_compatibility, reducescatter)
from horovod.tensorflow.compression import Compression  # noqa: F401
from horovod.tensorflow.functions import (  # noqa: F401
    allgather_object, broadcast_global_variables, broadcast_object,
    broadcast_object_fn, broadcast_variables)
from horovod.tensorflow.gradient_tape import (  # noqa: F401
    DistributedGradientTape, PartialDistributedGradientTape)
from horovod.tensorflow.hooks import BroadcastGlobalVariablesHook  # noqa: F401
from horovod.tensorflow.mpi_ops import (  # noqa: F401
    Adasum, Average, Max, Min, Product, ProcessSet, Sum, _allreduce,
    _grouped_allreduce, _grouped_reducescatter, _reducescatter,
    add_process_set, allgather, alltoall, barrier, broadcast, broadcast_,
    check_num_rank_power_of_2, cross_rank, cross_size, global_process_set,
    grouped_allgather, init, is_homogeneous, is_initialized, join,
    local_rank, local_rank_op, local_size, local_size_op,
    process_set_included_op, rank, rank_op, remove_process_set, shutdown,
    size, size_op, start_timeline, stop_timeline)
from horovod.tensorflow.optimizer import DistributedOptimizer  # noqa: F401
from horovod.tensorflow.util import (  # noqa: F401
    _cache, _executing_eagerly, _make_subgraph, refs_to_vars, vars_to_refs)
from horovod.tensorflow import elastic  # noqa: F401,E402


def __getattr__(name):
    # SyncBatchNormalization is a Keras layer: Keras is imported on first
    # use, not with horovod.tensorflow.
    if name == "SyncBatchNormalization":
        from horovod.tensorflow.sync_batch_norm import SyncBatchNormalization
        return SyncBatchNormalization
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
