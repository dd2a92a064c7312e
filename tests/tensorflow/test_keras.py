"""horovod.tensorflow.keras (and its alias horovod.keras) with Keras 3,
under horovodrun: DistributedOptimizer in model.fit (dense and sparse
gradients, local accumulation), each callback, and load_model."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import tensorflow as tf  # noqa: E402

import horovod.keras  # noqa: E402
import horovod.tensorflow as hvd_tf  # noqa: E402
import horovod.tensorflow.keras as hvd  # noqa: E402

hvd.init()
tf.config.threading.set_intra_op_parallelism_threads(1)
SIZE, RANK = hvd.size(), hvd.rank()

W0 = np.array([[0.5], [-1.0], [2.0]], np.float32)


def shard(rank, n=8):
    rng = np.random.default_rng(rank)
    return (rng.normal(size=(n, 3)).astype(np.float32),
            rng.normal(size=(n, 1)).astype(np.float32))


def linear_model(w=W0):
    model = keras.Sequential([keras.Input((3,)),
                              keras.layers.Dense(1, use_bias=False)])
    model.layers[0].kernel.assign(w)
    return model


def mse_grad(w, x, y):
    # d/dw mean((xw - y)^2)
    return 2.0 * x.T @ (x @ w - y) / len(x)


def average_grad(w, batch=None):
    grads = []
    for r in range(SIZE):
        x, y = shard(r)
        if batch is not None:
            x, y = x[batch], y[batch]
        grads.append(mse_grad(w, x, y))
    return np.mean(grads, axis=0)


def same_on_every_rank(array):
    gathered = hvd.allgather_object(np.asarray(array).tolist())
    return all(np.allclose(g, gathered[0]) for g in gathered)


# ---- DistributedOptimizer ----------------------------------------------------

@pytest.mark.parametrize("run_eagerly", [False, True])
def test_fit_applies_the_average_gradient(run_eagerly):
    model = linear_model()
    opt = hvd.DistributedOptimizer(keras.optimizers.SGD(0.1))
    assert type(opt).__name__ == "SGD"
    assert isinstance(opt, keras.optimizers.SGD)
    model.compile(opt, "mse", run_eagerly=run_eagerly)
    x, y = shard(RANK)
    model.fit(x, y, batch_size=len(x), epochs=1, verbose=0, shuffle=False)
    np.testing.assert_allclose(model.layers[0].kernel.numpy(),
                               W0 - 0.1 * average_grad(W0), rtol=1e-5)


def test_backward_passes_per_step_sums_locally_then_allreduces():
    model = linear_model()
    opt = hvd.DistributedOptimizer(keras.optimizers.SGD(0.1),
                                   backward_passes_per_step=2)
    model.compile(opt, "mse")
    x, y = shard(RANK)
    # Two batches of 4: one update, from the sum of both batches' averages.
    model.fit(x, y, batch_size=4, epochs=1, verbose=0, shuffle=False)
    grad = average_grad(W0, slice(0, 4)) + average_grad(W0, slice(4, 8))
    np.testing.assert_allclose(model.layers[0].kernel.numpy(),
                               W0 - 0.1 * grad, rtol=1e-5)


def test_hvd_tensorflow_distributed_optimizer_wraps_keras_with_options():
    model = linear_model()
    opt = hvd_tf.DistributedOptimizer(keras.optimizers.SGD(0.1),
                                      op=hvd.Sum, groups=1,
                                      compression=hvd.Compression.fp16)
    model.compile(opt, "mse")
    x, y = shard(RANK)
    model.fit(x, y, batch_size=len(x), epochs=1, verbose=0)
    np.testing.assert_allclose(model.layers[0].kernel.numpy(),
                               W0 - 0.1 * SIZE * average_grad(W0), rtol=1e-2)


@pytest.mark.parametrize("sparse_as_dense", [False, True])
def test_fit_with_embedding_gradients(sparse_as_dense):
    keras.utils.set_random_seed(RANK)   # different initial weights
    model = keras.Sequential([keras.Input((2,), dtype="int32"),
                              keras.layers.Embedding(10, 4),
                              keras.layers.Flatten(),
                              keras.layers.Dense(1)])
    opt = hvd.DistributedOptimizer(keras.optimizers.Adam(0.01),
                                   sparse_as_dense=sparse_as_dense)
    model.compile(opt, "mse")
    rng = np.random.default_rng(RANK)
    x = rng.integers(0, 10, size=(16, 2)).astype(np.int32)
    y = rng.normal(size=(16, 1)).astype(np.float32)
    model.fit(x, y, batch_size=8, epochs=2, verbose=0,
              callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0)])
    for v in model.variables:
        assert same_on_every_rank(v.numpy()), v.path


def test_refuses_what_it_cannot_wrap():
    with pytest.raises(ValueError):
        hvd.DistributedOptimizer(tf.compat.v1.train.GradientDescentOptimizer(1.0))
    with pytest.raises(ValueError):
        hvd.DistributedOptimizer(keras.optimizers.SGD(0.1), op=hvd.Sum,
                                 gradient_predivide_factor=2.0)


# ---- callbacks ---------------------------------------------------------------

def test_broadcast_global_variables_callback():
    model = linear_model(W0 + RANK)
    model.compile(keras.optimizers.SGD(0.0, momentum=0.5), "mse")
    x, y = shard(RANK)
    model.fit(x, y, batch_size=4, epochs=1, verbose=0,
              callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0)])
    np.testing.assert_array_equal(model.layers[0].kernel.numpy(), W0)
    assert same_on_every_rank(model.optimizer.variables[-1].numpy())


class _Record(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.epoch_logs, self.batch_lr = [], []

    def on_train_batch_begin(self, batch, logs=None):
        self.batch_lr.append(float(self.model.optimizer.learning_rate))

    def on_epoch_end(self, epoch, logs=None):
        self.epoch_logs.append(dict(logs))


def test_metric_average_callback():
    model = linear_model()
    model.compile(keras.optimizers.SGD(0.0), "mse", metrics=["mae"])
    x, y = shard(RANK)
    record = _Record()
    model.fit(x, y, batch_size=8, epochs=1, verbose=0,
              validation_data=shard(100 + RANK),
              callbacks=[hvd.callbacks.MetricAverageCallback(), record])
    logs = record.epoch_logs[0]
    val_losses = [np.mean((shard(100 + r)[0] @ W0 - shard(100 + r)[1]) ** 2)
                  for r in range(SIZE)]
    np.testing.assert_allclose(logs["val_loss"], np.mean(val_losses),
                               rtol=1e-5)
    # Averaged in Keras' float type, as Horovod does.
    assert logs["val_loss"].dtype == np.float32
    assert same_on_every_rank([logs[k] for k in sorted(logs)])


def test_learning_rate_warmup_callback():
    model = linear_model()
    model.compile(keras.optimizers.SGD(0.1), "mse")
    x, y = shard(RANK)
    record = _Record()
    warmup = hvd.callbacks.LearningRateWarmupCallback(
        initial_lr=0.4, warmup_epochs=2, momentum_correction=False)
    model.fit(x, y, batch_size=4, epochs=3, verbose=0,
              callbacks=[warmup, record])
    # 2 batches an epoch, each at the rate of its end (Horovod's): epoch
    # fractions .5, 1, 1.5, 2 (initial_lr), then warmup is over.
    expect = [0.4 / SIZE * (e * (SIZE - 1) / 2 + 1)
              for e in (0.5, 1, 1.5, 2)]
    np.testing.assert_allclose(record.batch_lr[:4], expect, rtol=1e-6)
    np.testing.assert_allclose(record.batch_lr[4:], [expect[-1]] * 2,
                               rtol=1e-6)
    assert record.epoch_logs[0]["lr"] == pytest.approx(expect[1])


def test_learning_rate_schedule_callback():
    model = linear_model()
    model.compile(keras.optimizers.SGD(0.1), "mse")
    x, y = shard(RANK)
    record = _Record()
    schedule = [
        hvd.callbacks.LearningRateScheduleCallback(
            initial_lr=1.0, multiplier=lambda e: 0.5 ** e, start_epoch=1,
            end_epoch=3),
        # A number: exponential decay from start_epoch, as in Horovod.
        hvd.callbacks.LearningRateScheduleCallback(
            initial_lr=2.0, multiplier=0.1, start_epoch=3),
    ]
    model.fit(x, y, batch_size=4, epochs=5, verbose=0,
              callbacks=schedule + [record])
    np.testing.assert_allclose(record.batch_lr,
                               [0.1, 0.1, 0.5, 0.5, 0.25, 0.25, 2.0, 2.0,
                                0.2, 0.2], rtol=1e-6)
    with pytest.raises(ValueError, match="initial_lr"):
        hvd.callbacks.LearningRateScheduleCallback(None, 0.5)


# ---- load_model, and the horovod.keras alias -------------------------------

def test_load_model_wraps_the_optimizer(tmp_path):
    model = linear_model()
    model.compile(hvd.DistributedOptimizer(keras.optimizers.Adam(0.01)), "mse")
    x, y = shard(RANK)
    model.fit(x, y, batch_size=4, epochs=1, verbose=0)
    path = str(tmp_path / f"model.{RANK}.keras")
    model.save(path)

    plain = keras.models.load_model(path)
    assert type(plain.optimizer) is keras.optimizers.Adam

    loaded = hvd.load_model(path, compression=hvd.Compression.fp16)
    assert isinstance(loaded.optimizer, hvd.distributed_class(keras.optimizers.Adam))
    assert int(loaded.optimizer.iterations) == 2
    np.testing.assert_array_equal(loaded.layers[0].kernel.numpy(),
                                  model.layers[0].kernel.numpy())
    # Its updates are allreduced: ranks that start equal stay equal.
    loaded.fit(x, y, batch_size=4, epochs=1, verbose=0)
    assert same_on_every_rank(loaded.layers[0].kernel.numpy())


def test_horovod_keras_alias():
    assert horovod.keras.DistributedOptimizer is hvd.DistributedOptimizer
    assert horovod.keras.load_model is hvd.load_model
    import horovod.keras.callbacks as cb
    assert cb.MetricAverageCallback is hvd.callbacks.MetricAverageCallback
    assert horovod.keras.rank() == RANK
