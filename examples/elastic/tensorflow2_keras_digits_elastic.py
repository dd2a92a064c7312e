#!/usr/bin/env python3
"""Elastic training with horovod.tensorflow.keras and model.fit on
scikit-learn's handwritten digits, in the shape of Horovod's
tensorflow2_keras_mnist_elastic.py.

    horovodrun -np 2 --min-np 1 --max-np 4 \\
        --host-discovery-script ./discover_hosts.sh \\
        python3 examples/elastic/tensorflow2_keras_digits_elastic.py

The model, its optimizer, the epoch and the batch live in a KerasState that
the callbacks keep current and commit every batch; hvd.elastic.run restarts
fit() in each new world from the last commit. Rank 0 prints a line per
epoch and the final test accuracy.
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

parser = argparse.ArgumentParser(description="horovod.keras elastic digits")
parser.add_argument("--batch-size", type=int, default=32)
parser.add_argument("--epochs", type=int, default=6)
parser.add_argument("--steps-per-epoch", type=int, default=40)
parser.add_argument("--lr", type=float, default=0.05)
args = parser.parse_args()

hvd.init()
keras.utils.set_random_seed(42)
tf.config.threading.set_intra_op_parallelism_threads(1)

digits = load_digits()
images = (digits.images[..., np.newaxis] / 16.0).astype(np.float32)
x_train, x_test, y_train, y_test = train_test_split(
    images, digits.target.astype(np.int64), test_size=0.25, random_state=0)

model = keras.Sequential([
    keras.Input((8, 8, 1)),
    keras.layers.Conv2D(16, 3, padding="same", activation="relu"),
    keras.layers.MaxPooling2D(2),
    keras.layers.Flatten(),
    keras.layers.Dense(64, activation="relu"),
    keras.layers.Dense(10, activation="softmax"),
])
model.compile(optimizer=hvd.DistributedOptimizer(
                  keras.optimizers.SGD(args.lr, momentum=0.9)),
              loss="sparse_categorical_crossentropy", metrics=["accuracy"])

state = hvd.elastic.KerasState(model, batch=0, epoch=0)


class EpochLine(keras.callbacks.Callback):
    def on_epoch_end(self, epoch, logs=None):
        if hvd.rank() == 0:
            print(f"epoch {state.epoch}/{args.epochs}: {hvd.size()} ranks, "
                  f"loss {logs['loss']:.4f}", flush=True)


callbacks = [
    hvd.elastic.UpdateEpochStateCallback(state),
    hvd.elastic.UpdateBatchStateCallback(state),
    hvd.elastic.CommitStateCallback(state),
    EpochLine(),
]


@hvd.elastic.run
def train(state):
    # Each world reshards the data over its ranks.
    data = tf.data.Dataset.from_tensor_slices((x_train, y_train)) \
        .shard(hvd.size(), hvd.rank()).repeat().shuffle(1000, seed=1) \
        .batch(args.batch_size)
    state.model.fit(data, steps_per_epoch=args.steps_per_epoch,
                    epochs=args.epochs - state.epoch, callbacks=callbacks,
                    verbose=0, shuffle=False)


train(state)
if hvd.rank() == 0:
    _, accuracy = model.evaluate(x_test, y_test, verbose=0)
    print(f"final test accuracy {accuracy:.2%}", flush=True)
