"""What scripts written for Horovod 0.28 meet in horovod.tensorflow and
horovod.tensorflow.keras, under horovodrun -np 2: tf.IndexedSlices
reductions (integer Average, mixed groups, refused scale factors),
SyncBatchNormalization against a full-batch BatchNormalization,
model-parallel local variables (DistributedGradientTape,
PartialDistributedGradientTape, both DistributedOptimizers,
PartialDistributedOptimizer, BroadcastGlobalVariablesCallback), in-place
broadcast_, horovod.tensorflow.util, the Keras value collectives, and the
signatures of Horovod's public functions."""

import inspect
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import tensorflow as tf  # noqa: E402

import horovod.keras  # noqa: E402
import horovod.tensorflow as hvd  # noqa: E402
import horovod.tensorflow.keras as hvd_keras  # noqa: E402

hvd.init()
tf.config.threading.set_intra_op_parallelism_threads(1)
RANK, SIZE = hvd.rank(), hvd.size()
MODES = ["eager", "function"]


def run(mode, fn, *args):
    return fn(*args) if mode == "eager" else tf.function(fn)(*args)


# ---- tf.IndexedSlices -------------------------------------------------------

def slices(rank, dtype):
    values = np.array([[rank + 1, 2 * rank + 3], [5, rank + 7]])
    return tf.IndexedSlices(tf.constant(values, dtype),
                            tf.constant([rank, rank + 1], tf.int64),
                            tf.constant([SIZE + 1, 2], tf.int64))


def gathered_values(dtype):
    return np.concatenate([slices(r, dtype).values.numpy()
                           for r in range(SIZE)])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype,result_dtype", [
    (tf.uint8, tf.float32), (tf.int32, tf.float64), (tf.int64, tf.float64),
    (tf.float32, tf.float32)])
def test_indexed_slices_average_divides_as_horovod(mode, dtype,
                                                   result_dtype):
    """Horovod divides the gathered values by the size with true division:
    integer values come back as floating point."""
    s = slices(RANK, dtype)
    out = run(mode, lambda v, i, d: hvd.allreduce(
        tf.IndexedSlices(v, i, d), op=hvd.Average),
        s.values, s.indices, s.dense_shape)
    assert out.values.dtype == result_dtype
    np.testing.assert_array_equal(
        out.values.numpy(),
        gathered_values(dtype).astype(np.float64) / SIZE)
    grouped = run(mode, lambda v, i, d: hvd.grouped_allreduce(
        [tf.IndexedSlices(v, i, d)], op=hvd.Average),
        s.values, s.indices, s.dense_shape)
    np.testing.assert_array_equal(grouped[0].values.numpy(),
                                  out.values.numpy())


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("slice_dtype", [tf.float32, tf.int32])
def test_grouped_allreduce_mixing_slices_and_dense_averages_both(
        mode, slice_dtype):
    s = slices(RANK, slice_dtype)
    dense = tf.constant([[RANK + 1.0, 10.0 * RANK]])

    def fn(a, v, i, d, b):
        return hvd.grouped_allreduce([a, tf.IndexedSlices(v, i, d), b],
                                     op=hvd.Average)
    a, sl, b = run(mode, fn, dense, s.values, s.indices, s.dense_shape,
                   2.0 * dense)
    mean = np.mean([[r + 1.0, 10.0 * r] for r in range(SIZE)], axis=0)
    np.testing.assert_allclose(a.numpy(), [mean])
    np.testing.assert_allclose(b.numpy(), [2.0 * mean])
    np.testing.assert_allclose(sl.values.numpy(),
                               gathered_values(slice_dtype) / SIZE)
    np.testing.assert_array_equal(
        sl.indices.numpy(), np.concatenate([[r, r + 1] for r in range(SIZE)]))


def test_indexed_slices_refuse_scale_factors_as_horovod():
    s = slices(RANK, tf.float32)
    for kwargs in ({"prescale_factor": 2.0}, {"postscale_factor": 0.5}):
        with pytest.raises(NotImplementedError, match="Pre/postscale"):
            hvd.allreduce(s, **kwargs)
        with pytest.raises(NotImplementedError, match="Pre/postscale"):
            hvd.grouped_allreduce([tf.ones([2]), s], **kwargs)
    # Every rank refused before any collective: the next one pairs up.
    np.testing.assert_allclose(hvd.allreduce(tf.ones([2]), op=hvd.Sum),
                               [SIZE, SIZE])


# ---- SyncBatchNormalization --------------------------------------------------

def test_sync_batch_normalization_axis_1_matches_full_batch():
    rng = np.random.default_rng(7)
    full = rng.normal(2.0, 3.0, size=(4 * SIZE, 3, 5)).astype(np.float32)
    mine = full[4 * RANK:4 * RANK + 4]
    sync = hvd.SyncBatchNormalization(axis=1, momentum=0.5)
    reference = keras.layers.BatchNormalization(axis=1, momentum=0.5)
    assert sync.name.startswith("sync_batch_normalization")
    out = sync(mine, training=True).numpy()
    expected = reference(full, training=True).numpy()
    np.testing.assert_allclose(out, expected[4 * RANK:4 * RANK + 4],
                               rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(sync.moving_mean.numpy(),
                               reference.moving_mean.numpy(), rtol=1e-5)
    np.testing.assert_allclose(sync.moving_variance.numpy(),
                               reference.moving_variance.numpy(), rtol=1e-5)
    with pytest.raises(ValueError, match="fused"):
        hvd.SyncBatchNormalization(fused=True)


def test_sync_batch_normalization_in_model_fit():
    """Inside fit's traced step (ops named by the graph) the moving
    statistics follow the global batch's."""
    rng = np.random.default_rng(8)
    full = rng.normal(-1.0, 2.0, size=(4 * SIZE, 3, 2)).astype(np.float32)
    mine = full[4 * RANK:4 * RANK + 4]
    model = keras.Sequential([keras.Input((3, 2)),
                              hvd.SyncBatchNormalization(axis=1,
                                                         momentum=0.0)])
    model.compile(keras.optimizers.SGD(0.0), "mse")
    model.fit(mine, mine, batch_size=4, epochs=1, verbose=0, shuffle=False)
    np.testing.assert_allclose(model.layers[0].moving_mean.numpy(),
                               full.mean(axis=(0, 2)), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(model.layers[0].moving_variance.numpy(),
                               full.var(axis=(0, 2)), rtol=1e-4)


# ---- model parallelism: local variables ---------------------------------------

def two_layer_model():
    """Dense(2) then Dense(1), every weight the rank's number: gradients
    differ between ranks."""
    init = keras.initializers.Constant(RANK + 1.0)
    model = keras.Sequential([
        keras.Input((3,)),
        keras.layers.Dense(2, kernel_initializer=init, bias_initializer=init),
        keras.layers.Dense(1, kernel_initializer=init,
                           bias_initializer=init)])
    return model


X_IN = np.array([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0]], np.float32)


def loss_of(model):
    return tf.reduce_mean(model(X_IN) ** 2)


def tape_gradients(model):
    with tf.GradientTape() as tape:
        loss = loss_of(model)
    return loss, tape, [g.numpy() for g in
                        tape.gradient(loss, model.trainable_variables)]


def every_rank(grads):
    return hvd.allgather_object([g.tolist() for g in grads])


def check_local_and_shared(got, local_grads, local_count):
    """The first local_count gradients: this rank's own divided by the
    size (Horovod's scale_local_gradients); the others: the average."""
    everyone = every_rank(local_grads)
    for i, g in enumerate(got):
        if i < local_count:
            expected = local_grads[i] / SIZE
        else:
            expected = np.mean([np.array(e[i]) for e in everyone], axis=0)
        np.testing.assert_allclose(np.asarray(g), expected, rtol=1e-5)


def test_gradient_tape_register_local_source():
    model = two_layer_model()
    with tf.GradientTape(persistent=True) as tape:
        loss = loss_of(model)
    variables = model.trainable_variables
    _, _, local = tape_gradients(model)
    tape = hvd.DistributedGradientTape(tape)
    tape.register_local_source(variables[0])
    tape.register_local_source(variables[1])
    check_local_and_shared(tape.gradient(loss, variables), local, 2)
    # Horovod's use_generic_names: the allreduces named grad_<i>.
    check_local_and_shared(
        tape.gradient(loss, variables, use_generic_names=True), local, 2)


def test_partial_distributed_gradient_tape_and_split():
    model = two_layer_model()
    with tf.GradientTape(persistent=True) as tape:
        loss = loss_of(model)
    _, _, local = tape_gradients(model)
    tape = hvd.PartialDistributedGradientTape(
        tape, local_layers=model.layers[0])
    variables = model.trainable_variables
    check_local_and_shared(tape.gradient(loss, variables), local, 2)
    local_pairs, global_pairs = tape.get_local_and_global_gradients(
        loss, variables)
    assert [v.name for v, _ in local_pairs] == [v.name for v in variables[:2]]
    assert [v.name for v, _ in global_pairs] == [v.name for v in
                                                 variables[2:]]
    with tf.GradientTape() as tape:
        loss = loss_of(model)
    unscaled = hvd.PartialDistributedGradientTape(
        tape, local_layers=[model.layers[0]], scale_local_gradients=False)
    np.testing.assert_allclose(unscaled.gradient(loss, variables)[0],
                               local[0], rtol=1e-6)
    with pytest.raises(ValueError, match="local layers"):
        hvd.PartialDistributedGradientTape(tf.GradientTape(),
                                           local_layers=[object()])


def test_v1_distributed_optimizer_register_local_var():
    graph = tf.Graph()
    with graph.as_default():
        w = tf.compat.v1.get_variable(
            "w", initializer=tf.constant([RANK + 1.0, 2.0]))
        b = tf.compat.v1.get_variable(
            "b", initializer=tf.constant([3.0 * (RANK + 1)]))
        loss = tf.reduce_sum(w * w) + tf.reduce_sum(b * b)
        opt = hvd.DistributedOptimizer(
            tf.compat.v1.train.GradientDescentOptimizer(0.1))
        opt.register_local_var(b)
        grads = [g for g, _ in opt.compute_gradients(loss, [w, b])]
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            gw, gb = session.run(grads)
    np.testing.assert_allclose(
        gw, np.mean([[2.0 * (r + 1), 4.0] for r in range(SIZE)], axis=0))
    np.testing.assert_allclose(gb, [6.0 * (RANK + 1) / SIZE])


@pytest.mark.parametrize("partial", [False, True])
def test_keras_optimizer_local_variables(partial):
    model = two_layer_model()
    _, _, local = tape_gradients(model)
    lr = 0.5
    if partial:
        opt = hvd_keras.PartialDistributedOptimizer(
            keras.optimizers.SGD(lr), local_layers=[model.layers[0]])
    else:
        opt = hvd_keras.DistributedOptimizer(keras.optimizers.SGD(lr))
        for v in model.layers[0].trainable_variables:
            opt.register_local_var(v)
    before = [v.numpy() for v in model.trainable_variables]
    with tf.GradientTape() as tape:
        loss = loss_of(model)
    variables = model.trainable_variables
    opt.apply_gradients(zip(tape.gradient(loss, variables), variables))
    applied = [(b - v.numpy()) / lr for b, v in zip(before, variables)]
    check_local_and_shared(applied, local, 2)


def test_num_groups_is_deprecated_as_in_horovod():
    with pytest.warns(DeprecationWarning, match="num_groups"):
        hvd.DistributedGradientTape(tf.GradientTape(), num_groups=1)
    with pytest.raises(ValueError, match="groups"):
        hvd.DistributedGradientTape(tf.GradientTape(), groups=-1)
    with pytest.raises(ValueError, match="average_aggregated_gradients"):
        hvd.DistributedOptimizer(keras.optimizers.SGD(0.1), op=hvd.Adasum,
                                 average_aggregated_gradients=True)


def test_horovod_keras_has_partial_distributed_optimizer():
    assert horovod.keras.PartialDistributedOptimizer is \
        hvd_keras.PartialDistributedOptimizer


def test_broadcast_callback_leaves_local_variables_out():
    init = keras.initializers.Constant(float(RANK))
    model = keras.Sequential([
        keras.Input((3,)),
        keras.layers.Dense(3, kernel_initializer=init, bias_initializer=init,
                           trainable=False),
        keras.layers.Dense(3, kernel_initializer=init, bias_initializer=init,
                           trainable=False)])
    model.compile(loss="mse")
    root = SIZE - 1
    local = list(model.layers[0].variables)
    callback = hvd_keras.callbacks.BroadcastGlobalVariablesCallback(
        root_rank=root, local_variables=local)
    model.fit(np.ones((2, 3)), np.ones((2, 3)), epochs=1, verbose=0,
              callbacks=[callback])
    for v in model.layers[0].variables:
        np.testing.assert_array_equal(v.numpy(), np.full(v.shape, RANK))
    for v in model.layers[1].variables:
        np.testing.assert_array_equal(v.numpy(), np.full(v.shape, root))
    single = hvd_keras.callbacks.BroadcastGlobalVariablesCallback(
        0, local_variables=model.layers[0].kernel)
    assert len(single._local_vars) == 1
    with pytest.raises(ValueError, match="tf.Variable"):
        hvd_keras.callbacks.BroadcastGlobalVariablesCallback(
            0, local_variables=[1.0])


# ---- in-place broadcast -------------------------------------------------------

def test_broadcast_in_place():
    a = tf.Variable([RANK + 1.0, 2.0])
    b = tf.Variable([[RANK * 10]], dtype=tf.int64)
    root = SIZE - 1
    values = hvd.broadcast_([a, b], root_rank=root)
    np.testing.assert_array_equal(a.numpy(), [root + 1.0, 2.0])
    np.testing.assert_array_equal(b.numpy(), [[root * 10]])
    np.testing.assert_array_equal(values[0].numpy(), a.numpy())
    k = keras.Variable(np.full((2,), float(RANK)))
    hvd.broadcast_([k], 0, name="keras_variable")
    np.testing.assert_array_equal(k.numpy(), [0.0, 0.0])
    c = tf.Variable([float(RANK)])
    hvd.broadcast_variables([c], root_rank=root, inplace=True)
    np.testing.assert_array_equal(c.numpy(), [float(root)])
    d = tf.Variable([RANK + 0.25])
    traced = tf.function(lambda: hvd.broadcast_([d], root, name="traced"))
    np.testing.assert_array_equal(traced()[0].numpy(), [root + 0.25])
    np.testing.assert_array_equal(d.numpy(), [root + 0.25])
    with pytest.raises(ValueError, match="variables"):
        hvd.broadcast_([tf.constant(1.0)], 0)


def test_broadcast_in_place_in_a_graph():
    graph = tf.Graph()
    with graph.as_default():
        v = tf.compat.v1.get_variable(
            "v", initializer=tf.constant([RANK + 5.0]))
        values = hvd.broadcast_([v], 0)
        with tf.compat.v1.Session() as session:
            session.run(v.initializer)
            np.testing.assert_array_equal(session.run(values)[0], [5.0])
            np.testing.assert_array_equal(session.run(v), [5.0])


# ---- names Horovod's scripts reach for -----------------------------------------

def test_util_helpers():
    from horovod.tensorflow import util
    assert util._executing_eagerly() and hvd._executing_eagerly()
    assert tf.function(lambda: tf.constant(util._executing_eagerly()))() \
        .numpy() == False  # noqa: E712
    calls = []
    cached = util._cache(lambda x: calls.append(x) or x * 2)
    assert cached(3) == 6 and cached(3) == 6 and calls == [3]
    v, w = tf.Variable(1.0), tf.Variable(2.0)
    refs = util.vars_to_refs([[v], [w]])
    assert util.refs_to_vars(refs) == [[v], [w]]
    assert float(util._make_subgraph(lambda: v * 3)()) == 3.0
    assert hvd._cache is util._cache and hvd.vars_to_refs is util.vars_to_refs


def test_keras_value_collectives():
    reduced = hvd_keras.allreduce([RANK + 1.0, 1.0], name="values")
    np.testing.assert_allclose(reduced.numpy(),
                               [np.mean(np.arange(1, SIZE + 1)), 1.0])
    summed = hvd_keras.allreduce(np.float32(2.0), op=hvd.Sum)
    assert float(summed) == 2.0 * SIZE
    np.testing.assert_array_equal(hvd_keras.allgather([RANK]).numpy(),
                                  np.arange(SIZE))
    assert int(hvd_keras.broadcast(RANK + 3, SIZE - 1)) == SIZE + 2
    scattered = hvd_keras.reducescatter(np.ones((SIZE, 2)) * (RANK + 1))
    np.testing.assert_allclose(scattered.numpy(),
                               [[np.mean(np.arange(1, SIZE + 1))] * 2])
    with pytest.raises(RuntimeError, match="eager"):
        hvd_keras.broadcast_global_variables(0)


# Horovod 0.28's parameter lists (names in order): a script passing
# arguments by position or by name gets the same meaning here.
HOROVOD_SIGNATURES = {
    hvd.allreduce: "tensor average device_dense device_sparse compression op "
                   "prescale_factor postscale_factor name process_set "
                   "ignore_name_scope",
    hvd.grouped_allreduce: "tensors average device_dense device_sparse "
                           "compression op prescale_factor postscale_factor "
                           "process_set ignore_name_scope name",
    hvd.reducescatter: "tensor device_dense compression op name process_set "
                       "ignore_name_scope prescale_factor postscale_factor",
    hvd.grouped_reducescatter: "tensors device_dense compression op "
                               "process_set prescale_factor postscale_factor",
    hvd.allgather: "tensor name ignore_name_scope process_set",
    hvd.grouped_allgather: "tensors name ignore_name_scope process_set",
    hvd.broadcast: "tensor root_rank name ignore_name_scope process_set",
    hvd.broadcast_: "variables root_rank name process_set",
    hvd.alltoall: "tensor splits name ignore_name_scope process_set",
    hvd._allreduce: "tensor name op prescale_factor postscale_factor "
                    "ignore_name_scope process_set",
    hvd._reducescatter: "tensor name op ignore_name_scope process_set "
                        "prescale_factor postscale_factor",
    hvd.broadcast_variables: "variables root_rank process_set inplace",
    hvd.broadcast_object: "obj root_rank session name process_set",
    hvd.broadcast_object_fn: "root_rank session name process_set",
    hvd.allgather_object: "obj session name process_set",
    hvd.DistributedOptimizer: "optimizer name use_locking device_dense "
                              "device_sparse compression sparse_as_dense "
                              "backward_passes_per_step op "
                              "gradient_predivide_factor "
                              "average_aggregated_gradients num_groups "
                              "groups process_set scale_local_gradients",
    hvd.DistributedGradientTape: "gradtape device_dense device_sparse "
                                 "compression sparse_as_dense op "
                                 "gradient_predivide_factor num_groups "
                                 "groups process_set scale_local_gradients",
    hvd.PartialDistributedGradientTape: "gradtape device_dense "
                                        "device_sparse compression "
                                        "sparse_as_dense op "
                                        "gradient_predivide_factor "
                                        "num_groups groups process_set "
                                        "local_layers scale_local_gradients",
    hvd_keras.DistributedOptimizer: "optimizer name device_dense "
                                    "device_sparse compression "
                                    "sparse_as_dense "
                                    "gradient_predivide_factor op "
                                    "backward_passes_per_step "
                                    "average_aggregated_gradients "
                                    "num_groups groups process_set "
                                    "scale_local_gradients",
    hvd_keras.allreduce: "value name average prescale_factor "
                         "postscale_factor op compression",
    hvd_keras.allgather: "value name",
    hvd_keras.broadcast: "value root_rank name",
    hvd_keras.reducescatter: "value name op",
    hvd_keras.load_model: "filepath custom_optimizers custom_objects "
                          "compression legacy_opts",
    hvd_keras.callbacks.BroadcastGlobalVariablesCallback.__init__:
        "self root_rank device local_variables",
}


def test_signatures_are_horovods():
    for fn, names in HOROVOD_SIGNATURES.items():
        got = list(inspect.signature(fn).parameters)
        assert got[:len(names.split())] == names.split(), fn.__qualname__


def test_reducescatter_refuses_adasum_as_horovod():
    # Horovod refuses Adasum on reducescatter at the call, on every rank,
    # before anything is negotiated (so no rank is left waiting).
    from horovod.common.exceptions import HorovodInternalError
    t = tf.ones([4])
    with pytest.raises(HorovodInternalError, match="only supports SUM"):
        hvd.reducescatter(t, op=hvd.Adasum)
    with pytest.raises(HorovodInternalError, match="only supports SUM"):
        hvd.grouped_reducescatter([t, t], op=hvd.Adasum)
    # The job goes on afterwards.
    assert hvd.reducescatter(t, op=hvd.Sum).shape[0] == 4 // SIZE
