"""TorchState: a model, an optimizer, ElasticSamplers and any picklable
values, saved at each commit, restored after a failure, and broadcast into
each new world."""

import copy

from horovod.common.elastic import ObjectState
from horovod.torch.elastic.sampler import ElasticSampler
from horovod.torch.functions import (allgather_object, broadcast_object,
                                     broadcast_optimizer_state,
                                     broadcast_parameters)
from horovod.torch.mpi_ops import rank


class TorchState(ObjectState):
    def __init__(self, model=None, optimizer=None, **kwargs):
        self.model, self.optimizer = model, optimizer
        self.samplers = {k: v for k, v in kwargs.items()
                         if isinstance(v, ElasticSampler)}
        values = {k: v for k, v in kwargs.items() if k not in self.samplers}
        for name, sampler in self.samplers.items():
            setattr(self, name, sampler)
        self._saved_model = self._saved_optimizer = None
        self._saved_samplers = {}
        super().__init__(bcast_object=broadcast_object, get_rank=rank,
                         **values)
        self._allgather_object = allgather_object
        self._save_objects()

    def save(self):
        self._save_objects()
        super().save()

    def _save_objects(self):
        if self.model is not None:
            self._saved_model = copy.deepcopy(self.model.state_dict())
        if self.optimizer is not None:
            self._saved_optimizer = copy.deepcopy(self.optimizer.state_dict())
        self._saved_samplers = {k: s.state_dict()
                                for k, s in self.samplers.items()}

    def restore(self):
        if self.model is not None:
            self.model.load_state_dict(self._saved_model)
        if self.optimizer is not None:
            self.optimizer.load_state_dict(self._saved_optimizer)
        for k, s in self.samplers.items():
            s.load_state_dict(self._saved_samplers[k])
        super().restore()

    def sync_from(self, root):
        if self.model is not None:
            broadcast_parameters(self.model.state_dict(), root_rank=root)
        if self.optimizer is not None:
            broadcast_optimizer_state(self.optimizer, root_rank=root)
        for k, s in self.samplers.items():
            s.load_state_dict(broadcast_object(s.state_dict(),
                                               root_rank=root))
        super().sync_from(root)

    def reset(self):
        """In a new world: the samplers split what is left over it."""
        for s in self.samplers.values():
            s.reset()
