#!/usr/bin/env python3
"""Trains a small convolutional network on scikit-learn's handwritten digits
with horovod.torch, in the style of Horovod's pytorch_mnist.py.

    horovodrun -np 2 python3 examples/torch/pytorch_digits.py

Each rank trains on its shard of the training set (DistributedSampler), the
gradients are averaged by DistributedOptimizer, and the test accuracy is
measured over the whole test set. The learning rate grows with the number
of ranks, as the global batch does, so 1, 2 and 4 ranks reach about the
same accuracy. Rank 0 prints a progress line per epoch and, at the end, the
accuracy and the training throughput (tools/train-demo reads that line).
"""

import argparse
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.data.distributed
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import horovod.torch as hvd


def parse_args():
    parser = argparse.ArgumentParser(description='horovod.torch digits example')
    parser.add_argument('--batch-size', type=int, default=32,
                        help='training batch size per rank')
    parser.add_argument('--epochs', type=int, default=15)
    parser.add_argument('--lr', type=float, default=0.02,
                        help='learning rate of one rank (scaled by the number of ranks)')
    parser.add_argument('--momentum', type=float, default=0.9)
    parser.add_argument('--seed', type=int, default=42)
    parser.add_argument('--fp16-allreduce', action='store_true',
                        help='send gradients as float16')
    parser.add_argument('--use-adasum', action='store_true',
                        help='combine updates with Adasum instead of averaging')
    parser.add_argument('--gradient-predivide-factor', type=float, default=1.0)
    parser.add_argument('--threads', type=int, default=1,
                        help='torch threads per rank (the model is tiny: more only contend)')
    parser.add_argument('--quiet', action='store_true', help='print only the final accuracy')
    return parser.parse_args()


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, kernel_size=3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, kernel_size=3, padding=1)
        self.drop = nn.Dropout(0.25)
        self.fc1 = nn.Linear(32 * 4 * 4, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = self.drop(torch.flatten(x, 1))
        x = F.relu(self.fc1(x))
        return F.log_softmax(self.fc2(x), dim=1)


def datasets(seed):
    digits = load_digits()
    images = torch.tensor(digits.images, dtype=torch.float32).unsqueeze(1) / 16.0
    labels = torch.tensor(digits.target, dtype=torch.int64)
    train_idx, test_idx = train_test_split(range(len(labels)), test_size=0.25,
                                           random_state=seed, stratify=digits.target)
    train = torch.utils.data.TensorDataset(images[train_idx], labels[train_idx])
    test = torch.utils.data.TensorDataset(images[test_idx], labels[test_idx])
    return train, test


def test_accuracy(model, test_set):
    """Accuracy over the whole test set: each rank scores every size()-th
    sample, and the counts are summed over ranks."""
    model.eval()
    mine = torch.utils.data.Subset(test_set, range(hvd.rank(), len(test_set), hvd.size()))
    correct = torch.zeros(2, dtype=torch.float64)
    with torch.no_grad():
        for data, target in torch.utils.data.DataLoader(mine, batch_size=256):
            correct[0] += (model(data).argmax(dim=1) == target).sum().item()
            correct[1] += len(target)
    totals = hvd.allreduce(correct, op=hvd.Sum, name='test_accuracy')
    return (totals[0] / totals[1]).item()


def progress_line(epoch, epochs, loss, accuracy, width=30):
    done = width * epoch // epochs
    return 'epoch %*d/%d [%s%s] loss %.4f, test accuracy %.2f%%' % (
        len(str(epochs)), epoch, epochs, '#' * done, '.' * (width - done), loss,
        100 * accuracy)


def main():
    args = parse_args()
    hvd.init()
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)

    train_set, test_set = datasets(args.seed)
    train_sampler = torch.utils.data.distributed.DistributedSampler(
        train_set, num_replicas=hvd.size(), rank=hvd.rank(), seed=args.seed)
    train_loader = torch.utils.data.DataLoader(train_set, batch_size=args.batch_size,
                                               sampler=train_sampler)

    model = Net()
    # Adasum combines updates without averaging, so it needs no scaling.
    lr_scaler = 1 if args.use_adasum else hvd.size()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr * lr_scaler,
                                momentum=args.momentum)

    # Horovod: every rank starts from rank 0's weights and optimizer state.
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)

    compression = hvd.Compression.fp16 if args.fp16_allreduce else hvd.Compression.none
    optimizer = hvd.DistributedOptimizer(
        optimizer, named_parameters=model.named_parameters(), compression=compression,
        op=hvd.Adasum if args.use_adasum else hvd.Average,
        gradient_predivide_factor=args.gradient_predivide_factor)

    training_seconds = 0.0
    images = 0
    for epoch in range(1, args.epochs + 1):
        model.train()
        train_sampler.set_epoch(epoch)
        start = time.perf_counter()
        loss_sum = torch.zeros(())
        for data, target in train_loader:
            optimizer.zero_grad()
            loss = F.nll_loss(model(data), target)
            loss.backward()
            optimizer.step()
            images += len(target)
            loss_sum += loss.detach() * len(target)
        training_seconds += time.perf_counter() - start
        mean_loss = loss_sum.item() / len(train_sampler)
        accuracy = test_accuracy(model, test_set)
        if hvd.rank() == 0 and not args.quiet:
            print(progress_line(epoch, args.epochs, mean_loss, accuracy), flush=True)
    # Every rank trained on as many images (DistributedSampler pads the
    # shards); the slowest rank's time is the job's.
    training_seconds = hvd.allreduce(torch.tensor(training_seconds), op=hvd.Max,
                                     name='training_seconds').item()
    images_per_second = hvd.size() * images / training_seconds
    if hvd.rank() == 0:
        print('ranks %d: final test accuracy %.2f%%, %.0f images/s, %.2f s of training'
              % (hvd.size(), 100 * accuracy, images_per_second, training_seconds),
              flush=True)


if __name__ == '__main__':
    main()
