"""ElasticSampler: each world splits what is left of the epoch over its
ranks, so a job that shrinks or grows resumes the epoch where its last
commit left it, with no sample skipped or repeated (except the padding
that makes the split even)."""

import math
import random

import torch.utils.data

from horovod.torch.mpi_ops import rank, size


class ElasticSampler(torch.utils.data.Sampler):
    def __init__(self, dataset, shuffle=True, seed=0):
        self.dataset = dataset
        self.shuffle = shuffle
        self.seed = seed
        self.epoch = 0
        self.processed_indices = set()
        self.reset()

    def set_epoch(self, epoch):
        """Starts epoch `epoch` afresh."""
        self.epoch = epoch
        self.processed_indices = set()
        self.reset()

    def record_batch(self, batch_idx, batch_size):
        """Marks batch `batch_idx` of every rank of this world processed
        (each rank knows the others' part of the split)."""
        start = batch_idx * batch_size
        for r in range(self.num_replicas):
            part = self.padded[r:self.total_size:self.num_replicas]
            self.processed_indices.update(part[start:start + batch_size])

    def record_indices(self, indices):
        self.processed_indices.update(indices)

    def get_indices(self, batch_idx, batch_size):
        start = batch_idx * batch_size
        return self.indices[start:min(start + batch_size, len(self.indices))]

    def state_dict(self):
        return dict(epoch=self.epoch,
                    processed_indices=set(self.processed_indices))

    def load_state_dict(self, state_dict):
        self.epoch = state_dict["epoch"]
        self.processed_indices = set(state_dict["processed_indices"])
        self.reset()

    def reset(self):
        """Splits what is left of the epoch over the current world."""
        self.num_replicas, self.rank = size(), rank()
        remaining = [i for i in range(len(self.dataset))
                     if i not in self.processed_indices]
        if self.shuffle:
            random.Random(self.seed + self.epoch).shuffle(remaining)
        self.remaining_indices = remaining
        self.num_samples = int(math.ceil(len(remaining) / self.num_replicas))
        self.total_size = self.num_samples * self.num_replicas
        padded = list(remaining)
        while remaining and len(padded) < self.total_size:
            padded += remaining[:self.total_size - len(padded)]
        self.padded = padded
        self.indices = padded[self.rank:self.total_size:self.num_replicas]

    def __iter__(self):
        return iter(list(self.indices))

    def __len__(self):
        return self.num_samples
