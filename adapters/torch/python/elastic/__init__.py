"""hvd.elastic for PyTorch: run, TorchState, ObjectState, ElasticSampler."""

from horovod.common.elastic import run_fn
from horovod.common.elastic import ObjectState as _ObjectState
from horovod.torch.elastic.sampler import ElasticSampler  # noqa: F401
from horovod.torch.elastic.state import TorchState  # noqa: F401
from horovod.torch.functions import allgather_object, broadcast_object
from horovod.torch.mpi_ops import init, rank, shutdown


class ObjectState(_ObjectState):
    """Picklable attributes, broadcast with horovod.torch."""

    def __init__(self, bcast_object=broadcast_object, get_rank=rank,
                 **kwargs):
        super().__init__(bcast_object=bcast_object, get_rank=get_rank,
                         **kwargs)
        self._allgather_object = allgather_object


def _reset():
    shutdown()
    init()


def run(func):
    """Decorator: func(state, ...) runs until it returns, moving to a new
    world after each failure or membership change (Horovod's
    hvd.elastic.run)."""
    return run_fn(func, _reset)
