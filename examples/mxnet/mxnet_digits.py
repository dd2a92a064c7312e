#!/usr/bin/env python3
"""Trains a small Gluon network on scikit-learn's handwritten digits with
horovod.mxnet, in the style of Horovod's mxnet_mnist.py.

    horovodrun -np 2 python3 examples/mxnet/mxnet_digits.py

Each rank trains on its shard of the training set; DistributedTrainer sums
the gradients over the ranks and averages them through the optimizer;
broadcast_parameters starts every rank from rank 0's weights (the network's
shapes are inferred at the first batch, so the broadcast happens then). The
learning rate is scaled by the number of ranks, as the global batch is, so 1
and 2 ranks reach about the same accuracy (tests/mxnet/test_examples.py).
"""

import argparse

import mxnet as mx
import numpy as np
from mxnet import autograd, gluon
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import horovod.mxnet as hvd


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description="horovod.mxnet digits example")
    parser.add_argument("--batch-size", type=int, default=32, help="training batch size per rank")
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--lr", type=float, default=0.05,
                        help="learning rate of one rank (scaled by the number of ranks)")
    parser.add_argument("--momentum", type=float, default=0.9)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--fp16-allreduce", action="store_true", help="send gradients as float16")
    parser.add_argument("--quiet", action="store_true", help="print only the final accuracy")
    return parser.parse_args(argv)


def datasets(seed):
    """(train images, test images, train labels, test labels), the same split
    on every rank."""
    digits = load_digits()
    images = (digits.data / 16.0).astype(np.float32)
    return train_test_split(images, digits.target.astype(np.float32), test_size=0.25,
                            random_state=seed, stratify=digits.target)


def make_net():
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(64, activation="relu"), gluon.nn.Dense(10))
    return net


def train(args):
    """Trains on this job's ranks; returns the test accuracy over the whole
    test set (the same on every rank)."""
    hvd.init()
    mx.random.seed(args.seed + hvd.rank())
    np.random.seed(args.seed + hvd.rank())
    x_train, x_test, y_train, y_test = datasets(args.seed)
    # Horovod: each rank trains on every size()-th sample and scores every
    # size()-th test sample.
    x_train, y_train = x_train[hvd.rank()::hvd.size()], y_train[hvd.rank()::hvd.size()]
    x_test, y_test = x_test[hvd.rank()::hvd.size()], y_test[hvd.rank()::hvd.size()]

    net = make_net()
    net.initialize(mx.init.Xavier())
    # Horovod: every rank starts from rank 0's weights.
    hvd.broadcast_parameters(net.collect_params(), root_rank=0)
    compression = hvd.Compression.fp16 if args.fp16_allreduce else hvd.Compression.none
    trainer = hvd.DistributedTrainer(
        net.collect_params(), "sgd",
        {"learning_rate": args.lr * hvd.size(), "momentum": args.momentum},
        compression=compression)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()

    # The shards differ by at most one sample: every rank takes the same
    # number of steps, so the allreduces pair up.
    steps = len(x_train) // args.batch_size
    order = np.arange(len(x_train))
    for epoch in range(args.epochs):
        np.random.shuffle(order)
        total = 0.0
        for step in range(steps):
            batch = order[step * args.batch_size:(step + 1) * args.batch_size]
            data, label = mx.nd.array(x_train[batch]), mx.nd.array(y_train[batch])
            with autograd.record():
                loss = loss_fn(net(data), label)
            loss.backward()
            trainer.step(args.batch_size)
            total += loss.mean().asscalar()
        if not args.quiet and hvd.rank() == 0:
            print("epoch %d: loss %.4f" % (epoch, total / steps))

    correct = (net(mx.nd.array(x_test)).argmax(axis=1) == mx.nd.array(y_test)).sum()
    # The accuracy of the whole test set: correct answers and samples of every rank.
    counts = hvd.allreduce(mx.nd.array([correct.asscalar(), len(y_test)], dtype=np.float64),
                           op=hvd.Sum, name="test_accuracy").asnumpy()
    return counts[0] / counts[1]


def main():
    args = parse_args()
    accuracy = train(args)
    if hvd.rank() == 0:
        print("ranks %d: final test accuracy %.2f%%" % (hvd.size(), 100 * accuracy))


if __name__ == "__main__":
    main()
