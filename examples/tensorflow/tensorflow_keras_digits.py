#!/usr/bin/env python3
"""Trains a small convolutional network on scikit-learn's handwritten digits
with horovod.tensorflow.keras and model.fit, in the style of Horovod's
tensorflow2_keras_mnist.py.

    horovodrun -np 2 python3 examples/tensorflow/tensorflow_keras_digits.py

Each rank trains on its shard of the training set; DistributedOptimizer
averages the gradients, BroadcastGlobalVariablesCallback starts every rank
from rank 0's weights, MetricAverageCallback averages the validation
metrics over the ranks, and the learning rate (scaled by the number of
ranks, as the global batch is) is warmed up over the first epochs. So 1 and 2
ranks reach about the same accuracy (tests/tensorflow/test_examples.py).
"""

import argparse
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402

import horovod.tensorflow.keras as hvd  # noqa: E402


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description="horovod.tensorflow.keras digits example")
    parser.add_argument("--batch-size", type=int, default=64, help="training batch size per rank")
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--lr", type=float, default=0.04,
                        help="learning rate of one rank (scaled by the number of ranks)")
    parser.add_argument("--momentum", type=float, default=0.9)
    parser.add_argument("--warmup-epochs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--fp16-allreduce", action="store_true", help="send gradients as float16")
    parser.add_argument("--quiet", action="store_true", help="print only the final accuracy")
    return parser.parse_args(argv)


def datasets(seed):
    """(train images, train labels, test images, test labels), the same split
    on every rank."""
    digits = load_digits()
    images = (digits.images[..., np.newaxis] / 16.0).astype(np.float32)
    return train_test_split(images, digits.target.astype(np.int64), test_size=0.25,
                            random_state=seed, stratify=digits.target)


def make_model():
    return keras.Sequential([
        keras.Input((8, 8, 1)),
        keras.layers.Conv2D(16, 3, padding="same", activation="relu"),
        keras.layers.Conv2D(32, 3, padding="same", activation="relu"),
        keras.layers.MaxPooling2D(2),
        keras.layers.Dropout(0.25),
        keras.layers.Flatten(),
        keras.layers.Dense(64, activation="relu"),
        keras.layers.Dense(10, activation="softmax"),
    ])


def train(args):
    """Trains on this job's ranks; returns the test accuracy over the whole
    test set (the same on every rank)."""
    hvd.init()
    keras.utils.set_random_seed(args.seed + hvd.rank())
    tf.config.threading.set_intra_op_parallelism_threads(1)
    x_train, x_test, y_train, y_test = datasets(args.seed)
    # Horovod: each rank trains on every size()-th sample and scores every
    # size()-th test sample.
    x_train, y_train = x_train[hvd.rank()::hvd.size()], y_train[hvd.rank()::hvd.size()]
    x_test, y_test = x_test[hvd.rank()::hvd.size()], y_test[hvd.rank()::hvd.size()]

    model = make_model()
    scaled_lr = args.lr * hvd.size()
    compression = hvd.Compression.fp16 if args.fp16_allreduce else hvd.Compression.none
    optimizer = hvd.DistributedOptimizer(
        keras.optimizers.SGD(scaled_lr, momentum=args.momentum), compression=compression)
    model.compile(optimizer=optimizer, loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])

    callbacks = [
        # Horovod: every rank starts from rank 0's weights.
        hvd.callbacks.BroadcastGlobalVariablesCallback(0),
        # Horovod: the validation metrics of the whole test set.
        hvd.callbacks.MetricAverageCallback(),
        hvd.callbacks.LearningRateWarmupCallback(initial_lr=scaled_lr,
                                                 warmup_epochs=args.warmup_epochs,
                                                 momentum_correction=False),
    ]
    # The shards differ by at most one sample: every rank takes the same
    # number of steps, so the allreduces pair up.
    steps = len(x_train) // args.batch_size
    history = model.fit(x_train, y_train, batch_size=args.batch_size, epochs=args.epochs,
                        steps_per_epoch=steps, callbacks=callbacks,
                        validation_data=(x_test, y_test),
                        verbose=0 if args.quiet or hvd.rank() != 0 else 2)
    # Weighted by each rank's test shard: the accuracy of the whole set.
    _, accuracy = model.evaluate(x_test, y_test, verbose=0)
    counts = hvd.allreduce(np.array([accuracy * len(y_test), len(y_test)]), op=hvd.Sum,
                           name="test_accuracy").numpy()
    del history
    return counts[0] / counts[1]


def main():
    args = parse_args()
    accuracy = train(args)
    if hvd.rank() == 0:
        print("ranks %d: final test accuracy %.2f%%" % (hvd.size(), 100 * accuracy))


if __name__ == "__main__":
    main()
