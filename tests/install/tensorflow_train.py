"""A minimal horovod.tensorflow training script: a linear model fitted to
y = 3x - 1 on each rank's half of the data with DistributedGradientTape."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402

import horovod.tensorflow as hvd  # noqa: E402

hvd.init()
x = tf.reshape(tf.linspace(-1.0, 1.0, 64), (-1, 1))
y = 3 * x - 1
x, y = x[hvd.rank()::hvd.size()], y[hvd.rank()::hvd.size()]
weight = tf.Variable([[0.1 * (hvd.rank() + 1)]])
bias = tf.Variable([0.0])
hvd.broadcast_variables([weight, bias], root_rank=0)
optimizer = tf.keras.optimizers.SGD(learning_rate=0.5)
for step in range(50):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((tf.matmul(x, weight) + bias - y) ** 2)
    tape = hvd.DistributedGradientTape(tape)
    gradients = tape.gradient(loss, [weight, bias])
    optimizer.apply_gradients(zip(gradients, [weight, bias]))
loss = hvd.allreduce(loss, name="final_loss")
weights = hvd.allgather(tf.reshape(weight, (1, 1)))
assert bool(tf.reduce_all(weights == weights[0])), weights.numpy()
assert float(loss) < 1e-3, float(loss)
print(f"rank {hvd.rank()}: tensorflow {tf.__version__}, loss "
      f"{float(loss):.2e}, weight {float(weight[0, 0]):.3f}, bias "
      f"{float(bias[0]):.3f}")
