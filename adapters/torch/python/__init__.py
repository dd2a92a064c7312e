"""horovod.torch: Horovod's PyTorch API.

    import horovod.torch as hvd
    hvd.init()
    optimizer = hvd.DistributedOptimizer(optimizer, model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
"""

from horovod.common.exceptions import (  # noqa: F401
    HorovodInternalError, HostsUpdatedInterrupt)
from horovod.torch.compression import Compression  # noqa: F401
from horovod.torch.mpi_ops import (  # noqa: F401
    Adasum, Average, Max, Min, Product, ProcessSet, Sum, add_process_set,
    allgather, allgather_async, allreduce, allreduce_, allreduce_async,
    allreduce_async_, alltoall, alltoall_async, barrier, broadcast,
    broadcast_, broadcast_async, broadcast_async_, ccl_built, cross_rank,
    cross_size, cuda_built, ddl_built, global_process_set, gloo_built,
    gloo_enabled, grouped_allgather, grouped_allgather_async,
    grouped_allreduce, grouped_allreduce_, grouped_allreduce_async,
    grouped_allreduce_async_, grouped_reducescatter,
    grouped_reducescatter_async, init, is_homogeneous, is_initialized, join,
    local_rank, local_size, mpi_built, mpi_enabled, mpi_threads_supported,
    nccl_built, poll, rank, reducescatter, reducescatter_async,
    remove_process_set, rocm_built, shutdown, size, sparse_allreduce_async,
    start_timeline, stop_timeline, synchronize)
from horovod.torch.functions import (  # noqa: F401
    allgather_object, broadcast_object, broadcast_optimizer_state,
    broadcast_parameters)
from horovod.torch.optimizer import DistributedOptimizer  # noqa: F401
from horovod.torch.sync_batch_norm import SyncBatchNorm  # noqa: F401
from horovod.torch import elastic  # noqa: F401,E402
