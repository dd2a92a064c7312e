"""horovod.mxnet: Horovod's MXNet API.

    import horovod.mxnet as hvd
    hvd.init()
    trainer = hvd.DistributedTrainer(net.collect_params(), "sgd",
                                     {"learning_rate": 0.1})
    hvd.broadcast_parameters(net.collect_params(), root_rank=0)
"""

from horovod.common.exceptions import HostsUpdatedInterrupt  # noqa: F401
from horovod.mxnet.compression import Compression  # noqa: F401
from horovod.mxnet.functions import (  # noqa: F401
    allgather_object, broadcast_object, broadcast_parameters)
from horovod.mxnet.mpi_ops import (  # noqa: F401
    Adasum, Average, HorovodInternalError, Max, Min, Product, ProcessSet,
    Sum, add_process_set, allgather, allreduce, allreduce_, alltoall,
    broadcast, broadcast_, ccl_built, cross_rank, cross_size, cuda_built,
    ddl_built, global_process_set, gloo_built, gloo_enabled,
    grouped_allgather, grouped_allreduce, grouped_allreduce_,
    grouped_reducescatter, init, is_homogeneous, is_initialized, local_rank,
    local_size, mpi_built, mpi_enabled, mpi_threads_supported, nccl_built,
    rank, reducescatter, remove_process_set, rocm_built, shutdown, size,
    start_timeline, stop_timeline)
from horovod.mxnet.optimizer import (  # noqa: F401
    DistributedOptimizer, DistributedTrainer)
