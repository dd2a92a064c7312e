#!/usr/bin/env python3
"""A custom training loop with hvd.DistributedGradientTape on
scikit-learn's handwritten digits, in the style of Horovod's
tensorflow2_mnist.py.

    horovodrun -np 2 python3 examples/tensorflow/tensorflow_gradient_tape_digits.py

The training step is a tf.function: the tape's gradients are allreduced by
Horovod ops inside the graph. After the first step every rank takes rank
0's weights and optimizer state (hvd.broadcast_variables).
"""

import argparse
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402

import horovod.tensorflow as hvd  # noqa: E402


def parse_args():
    parser = argparse.ArgumentParser(description="horovod.tensorflow custom loop example")
    parser.add_argument("--batch-size", type=int, default=32, help="batch size per rank")
    parser.add_argument("--steps", type=int, default=400, help="training steps of the job")
    parser.add_argument("--lr", type=float, default=0.001,
                        help="Adam learning rate of one rank (scaled by the number of ranks)")
    parser.add_argument("--seed", type=int, default=42)
    return parser.parse_args()


def main():
    args = parse_args()
    hvd.init()
    tf.config.threading.set_intra_op_parallelism_threads(1)
    keras.utils.set_random_seed(args.seed + hvd.rank())

    digits = load_digits()
    images = (digits.images[..., np.newaxis] / 16.0).astype(np.float32)
    x_train, x_test, y_train, y_test = train_test_split(
        images, digits.target, test_size=0.25, random_state=args.seed, stratify=digits.target)
    dataset = (tf.data.Dataset.from_tensor_slices((x_train, y_train))
               .shard(hvd.size(), hvd.rank()).repeat().shuffle(1000, seed=args.seed)
               .batch(args.batch_size))

    model = keras.Sequential([
        keras.Input((8, 8, 1)),
        keras.layers.Conv2D(16, 3, padding="same", activation="relu"),
        keras.layers.MaxPooling2D(2),
        keras.layers.Flatten(),
        keras.layers.Dense(64, activation="relu"),
        keras.layers.Dense(10),
    ])
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    # Horovod: the learning rate grows with the global batch.
    optimizer = keras.optimizers.Adam(args.lr * hvd.size())

    @tf.function
    def training_step(images, labels, first_batch):
        with tf.GradientTape() as tape:
            loss = loss_fn(labels, model(images, training=True))
        # Horovod: the tape's gradients are averaged over the ranks.
        tape = hvd.DistributedGradientTape(tape)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        # Horovod: after the first step (the optimizer's variables exist
        # then) every rank takes rank 0's state.
        if first_batch:
            hvd.broadcast_variables(model.variables, root_rank=0)
            hvd.broadcast_variables(optimizer.variables, root_rank=0)
        return loss

    # Horovod: the job takes args.steps steps whatever its size.
    for step, (images, labels) in enumerate(dataset.take(args.steps // hvd.size())):
        loss = training_step(images, labels, step == 0)
        if step % 50 == 0 and hvd.rank() == 0:
            print("step %d: loss %.4f" % (step, loss))

    logits = model(x_test[hvd.rank()::hvd.size()], training=False)
    correct = np.sum(np.argmax(logits, axis=1) == y_test[hvd.rank()::hvd.size()])
    totals = hvd.allreduce(np.array([correct, len(y_test[hvd.rank()::hvd.size()])], np.float64),
                           op=hvd.Sum, name="test_accuracy").numpy()
    if hvd.rank() == 0:
        print("ranks %d: final test accuracy %.2f%%" % (hvd.size(), 100 * totals[0] / totals[1]))


if __name__ == "__main__":
    main()
