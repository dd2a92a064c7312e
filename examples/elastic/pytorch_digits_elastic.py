#!/usr/bin/env python3
"""Elastic training with horovod.torch on scikit-learn's handwritten
digits, in the shape of Horovod's pytorch_mnist_elastic.py: the job keeps
training while workers come and go.

    horovodrun -np 2 --min-np 1 --max-np 4 \\
        --host-discovery-script ./discover_hosts.sh \\
        python3 examples/elastic/pytorch_digits_elastic.py

The model, the optimizer and the sampler's progress through the epoch live
in a TorchState, committed every --batches-per-commit batches. When a
worker fails, the others go back to the last commit and continue in a new
world without it; when hosts are added, the new workers receive the state
at the next commit. Rank 0 prints a line per epoch and the final test
accuracy.
"""

import argparse

import torch
import torch.nn.functional as F
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import horovod.torch as hvd

parser = argparse.ArgumentParser(description="horovod.torch elastic digits")
parser.add_argument("--batch-size", type=int, default=32)
parser.add_argument("--epochs", type=int, default=8)
parser.add_argument("--lr", type=float, default=0.05)
parser.add_argument("--batches-per-commit", type=int, default=4)
args = parser.parse_args()

hvd.init()
torch.manual_seed(42)
torch.set_num_threads(1)

digits = load_digits()
x = torch.tensor(digits.images / 16.0, dtype=torch.float32).unsqueeze(1)
y = torch.tensor(digits.target, dtype=torch.int64)
x_train, x_test, y_train, y_test = train_test_split(
    x, y, test_size=0.25, random_state=0)
train_set = torch.utils.data.TensorDataset(x_train, y_train)

model = torch.nn.Sequential(
    torch.nn.Conv2d(1, 16, 3, padding=1), torch.nn.ReLU(),
    torch.nn.MaxPool2d(2), torch.nn.Flatten(),
    torch.nn.Linear(16 * 4 * 4, 64), torch.nn.ReLU(),
    torch.nn.Linear(64, 10))
optimizer = hvd.DistributedOptimizer(
    torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9),
    named_parameters=model.named_parameters())
sampler = hvd.elastic.ElasticSampler(train_set, shuffle=True, seed=1)


def accuracy():
    with torch.no_grad():
        return (model(x_test).argmax(1) == y_test).float().mean().item()


@hvd.elastic.run
def train(state):
    while state.epoch < args.epochs:
        loader = torch.utils.data.DataLoader(
            train_set, batch_size=args.batch_size, sampler=state.sampler)
        for batch_idx, (data, target) in enumerate(loader):
            optimizer.zero_grad()
            F.cross_entropy(model(data), target).backward()
            optimizer.step()
            state.sampler.record_batch(batch_idx, args.batch_size)
            state.batches += 1
            if state.batches % args.batches_per_commit == 0:
                state.commit()
        state.epoch += 1
        state.sampler.set_epoch(state.epoch)
        if hvd.rank() == 0:
            print(f"epoch {state.epoch}/{args.epochs}: {hvd.size()} ranks, "
                  f"test accuracy {accuracy():.2%}", flush=True)
        state.commit()


state = hvd.elastic.TorchState(model, optimizer, sampler=sampler, epoch=0,
                               batches=0)
train(state)
if hvd.rank() == 0:
    print(f"final test accuracy {accuracy():.2%}", flush=True)
