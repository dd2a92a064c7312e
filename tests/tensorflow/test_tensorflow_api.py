"""horovod.tensorflow above the low-level ops, under horovodrun: allreduce
and its ops, scaling, compression and tf.IndexedSlices, the grouped ops,
broadcast of variables and objects, DistributedGradientTape, the
tf.compat.v1 DistributedOptimizer with BroadcastGlobalVariablesHook, and
process sets. Each test runs eagerly and inside tf.function where both
exist; every rank runs the same tests in the same order."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import tensorflow as tf  # noqa: E402

import horovod.tensorflow as hvd  # noqa: E402

# A static process set of rank 0 alone.
FIRST = hvd.ProcessSet([0])
hvd.init(process_sets=[FIRST])
tf.config.threading.set_intra_op_parallelism_threads(1)
SIZE, RANK = hvd.size(), hvd.rank()

MODES = ["eager", "function"]


def run(mode, fn, *args):
    """fn(*args) eagerly, or as a tf.function."""
    return fn(*args) if mode == "eager" else tf.function(fn)(*args)


def rank_values(rank, shape=(3, 2), dtype=np.float32):
    rng = np.random.default_rng(1000 + rank)
    return rng.integers(1, 5, size=shape).astype(dtype)


ALL = [rank_values(r) for r in range(SIZE)]


# ---- allreduce ------------------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("op,expect", [
    (hvd.Average, lambda a: np.mean(a, axis=0)),
    (hvd.Sum, lambda a: np.sum(a, axis=0)),
    (hvd.Min, lambda a: np.min(a, axis=0)),
    (hvd.Max, lambda a: np.max(a, axis=0)),
    (hvd.Product, lambda a: np.prod(a, axis=0)),
])
def test_allreduce_ops(mode, op, expect):
    out = run(mode, lambda t: hvd.allreduce(t, op=op), tf.constant(ALL[RANK]))
    np.testing.assert_allclose(out.numpy(), expect(np.stack(ALL)), rtol=1e-6)


@pytest.mark.parametrize("mode", MODES)
def test_allreduce_default_is_average_and_average_flag(mode):
    out = run(mode, hvd.allreduce, tf.constant(ALL[RANK]))
    np.testing.assert_allclose(out.numpy(), np.mean(ALL, axis=0), rtol=1e-6)
    with pytest.warns(DeprecationWarning):
        summed = hvd.allreduce(tf.constant(ALL[RANK]), average=False)
    np.testing.assert_allclose(summed.numpy(), np.sum(ALL, axis=0))
    with pytest.raises(ValueError):
        hvd.allreduce(tf.constant(ALL[RANK]), average=True, op=hvd.Sum)


@pytest.mark.parametrize("mode", MODES)
def test_allreduce_prescale_postscale(mode):
    out = run(mode, lambda t: hvd.allreduce(t, op=hvd.Sum, prescale_factor=0.5,
                                            postscale_factor=3.0),
              tf.constant(ALL[RANK], tf.float64))
    np.testing.assert_allclose(out.numpy(), 1.5 * np.sum(ALL, axis=0))


def test_allreduce_variable_and_numpy():
    v = tf.Variable(ALL[RANK])
    np.testing.assert_allclose(hvd.allreduce(v, op=hvd.Sum).numpy(),
                               np.sum(ALL, axis=0))
    np.testing.assert_allclose(hvd.allreduce(ALL[RANK], op=hvd.Sum).numpy(),
                               np.sum(ALL, axis=0))


def test_allreduce_adasum_runs():
    # Adasum of identical vectors is that vector.
    same = tf.constant([1.0, 2.0, 3.0, 4.0])
    out = hvd.allreduce(same, op=hvd.Adasum, name="adasum_same")
    np.testing.assert_allclose(out.numpy(), same.numpy(), rtol=1e-5)


@pytest.mark.parametrize("mode", MODES)
def test_allreduce_fp16_compression(mode):
    t = tf.constant(ALL[RANK] / 4.0, tf.float32)
    out = run(mode, lambda x: hvd.allreduce(x, op=hvd.Sum,
                                            compression=hvd.Compression.fp16),
              t)
    assert out.dtype == tf.float32
    np.testing.assert_allclose(out.numpy(), np.sum(ALL, axis=0) / 4.0,
                               rtol=1e-3)
    ints = tf.constant([RANK, 1], tf.int32)
    compressed, ctx = hvd.Compression.fp16.compress(ints)
    assert compressed.dtype == tf.int32 and ctx is None
    compressed, ctx = hvd.Compression.fp16.compress(t)
    assert compressed.dtype == tf.float16
    assert hvd.Compression.fp16.decompress(compressed, ctx).dtype == tf.float32


def rank_slices(rank):
    # Rank r contributes rows r and r + 1 of a 6 x 2 tensor.
    return tf.IndexedSlices(tf.constant(rank_values(rank, (2, 2))),
                            tf.constant([rank, rank + 1], tf.int64),
                            dense_shape=tf.constant([SIZE + 1, 2], tf.int64))


def dense_of(slices_list):
    out = np.zeros((SIZE + 1, 2), np.float32)
    for s in slices_list:
        for row, idx in zip(s.values.numpy(), s.indices.numpy()):
            out[idx] += row
    return out


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("op", [hvd.Sum, hvd.Average])
def test_allreduce_indexed_slices_gathered(mode, op):
    s = rank_slices(RANK)
    out = run(mode, lambda v, i, d: hvd.allreduce(
        tf.IndexedSlices(v, i, d), op=op), s.values, s.indices, s.dense_shape)
    assert isinstance(out, tf.IndexedSlices)
    # Gathered: every rank's rows, in rank order.
    assert out.values.shape[0] == 2 * SIZE
    np.testing.assert_array_equal(
        out.indices.numpy(),
        np.concatenate([[r, r + 1] for r in range(SIZE)]))
    expect = dense_of([rank_slices(r) for r in range(SIZE)])
    if op == hvd.Average:
        expect = expect / SIZE
    np.testing.assert_allclose(tf.convert_to_tensor(out).numpy(), expect,
                               rtol=1e-6)


def test_allreduce_indexed_slices_refuses_adasum_and_min():
    with pytest.raises(NotImplementedError, match="sparse_as_dense"):
        hvd.allreduce(rank_slices(RANK), op=hvd.Adasum)
    with pytest.raises(NotImplementedError):
        hvd.allreduce(rank_slices(RANK), op=hvd.Min)


@pytest.mark.parametrize("mode", MODES)
def test_grouped_allreduce(mode):
    def fn(a, b, v, i, d):
        return hvd.grouped_allreduce([a, tf.IndexedSlices(v, i, d), b],
                                     op=hvd.Sum)
    s = rank_slices(RANK)
    a, b = ALL[RANK], ALL[RANK][:1] * 2
    out = run(mode, fn, tf.constant(a), tf.constant(b), s.values, s.indices,
              s.dense_shape)
    np.testing.assert_allclose(out[0].numpy(), np.sum(ALL, axis=0))
    np.testing.assert_allclose(out[2].numpy(),
                               np.sum([x[:1] * 2 for x in ALL], axis=0))
    assert isinstance(out[1], tf.IndexedSlices)
    np.testing.assert_allclose(tf.convert_to_tensor(out[1]).numpy(),
                               dense_of([rank_slices(r) for r in range(SIZE)]))


# ---- the other collectives through the top-level API ---------------------

@pytest.mark.parametrize("mode", MODES)
def test_allgather_broadcast_alltoall(mode):
    def fn(x):
        gathered = hvd.allgather(x)
        root = hvd.broadcast(x, root_rank=0)
        splits = tf.ones([SIZE], tf.int32)
        received, rsplits = hvd.alltoall(tf.fill([SIZE], RANK), splits=splits)
        return gathered, root, received, rsplits
    gathered, root, received, rsplits = run(mode, fn, tf.constant(ALL[RANK]))
    np.testing.assert_array_equal(gathered.numpy(), np.concatenate(ALL))
    np.testing.assert_array_equal(root.numpy(), ALL[0])
    np.testing.assert_array_equal(received.numpy(), np.arange(SIZE))
    np.testing.assert_array_equal(rsplits.numpy(), np.ones(SIZE))


@pytest.mark.parametrize("mode", MODES)
def test_reducescatter_and_grouped(mode):
    rows = np.stack([np.full((2,), r + 1.0, np.float32)
                     for r in range(SIZE)])      # SIZE x 2, same on all
    mine = rows * (RANK + 1)

    def fn(x):
        return (hvd.reducescatter(x, op=hvd.Sum),
                hvd.grouped_reducescatter([x, 2 * x], op=hvd.Sum))
    one, (g1, g2) = run(mode, fn, tf.constant(mine))
    total = rows * sum(r + 1 for r in range(SIZE))
    np.testing.assert_allclose(one.numpy(), total[RANK:RANK + 1])
    np.testing.assert_allclose(g1.numpy(), total[RANK:RANK + 1])
    np.testing.assert_allclose(g2.numpy(), 2 * total[RANK:RANK + 1])
    avg = hvd.reducescatter(tf.constant(mine), compression=hvd.Compression.fp16)
    np.testing.assert_allclose(avg.numpy(), total[RANK:RANK + 1] / SIZE,
                               rtol=1e-3)


def test_join_and_barrier():
    hvd.barrier()
    assert 0 <= hvd.join() < SIZE
    assert int(hvd.size_op()) == SIZE and int(hvd.rank_op()) == RANK
    assert int(hvd.local_size_op()) == hvd.local_size()
    assert int(hvd.local_rank_op()) == hvd.local_rank()


# ---- broadcast of variables and objects ----------------------------------

def test_broadcast_variables_eager():
    vs = [tf.Variable(rank_values(RANK)), tf.Variable(float(RANK))]
    hvd.broadcast_variables(vs, root_rank=0)
    np.testing.assert_array_equal(vs[0].numpy(), ALL[0])
    assert vs[1].numpy() == 0.0


def test_broadcast_variables_in_function():
    v = tf.Variable(rank_values(RANK))

    @tf.function
    def bcast():
        hvd.broadcast_variables([v], root_rank=SIZE - 1)
    bcast()
    np.testing.assert_array_equal(v.numpy(), ALL[SIZE - 1])


def test_broadcast_and_allgather_object():
    obj = {"rank": RANK, "payload": list(range(RANK + 3))}
    assert hvd.broadcast_object(obj, root_rank=0) == {"rank": 0,
                                                      "payload": [0, 1, 2]}
    got = hvd.allgather_object(obj)
    assert got == [{"rank": r, "payload": list(range(r + 3))}
                   for r in range(SIZE)]
    assert hvd.broadcast_object(lambda x: x + RANK, root_rank=0)(1) == 1


# ---- DistributedGradientTape ----------------------------------------------

def shard(rank):
    rng = np.random.default_rng(rank)
    return (rng.normal(size=(8, 3)).astype(np.float32),
            rng.normal(size=(8, 1)).astype(np.float32))


W0 = np.array([[0.5], [-1.0], [2.0]], np.float32)


def local_grad(x, y):
    w = tf.Variable(W0)
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((x @ w - y) ** 2)
    return tape.gradient(loss, w).numpy()


EXPECTED_GRAD = np.mean([local_grad(*shard(r)) for r in range(SIZE)], axis=0)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kwargs", [{}, {"groups": 1}, {"num_groups": 2},
                                    {"gradient_predivide_factor": 2.0},
                                    {"compression": hvd.Compression.fp16}])
def test_distributed_gradient_tape(mode, kwargs):
    w, b = tf.Variable(W0), tf.Variable([0.0])
    x, y = shard(RANK)

    def grads():
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((x @ w + 0 * b - y) ** 2)
        tape = hvd.DistributedGradientTape(tape, **kwargs)
        return tape.gradient(loss, {"w": w, "b": b})
    g = run(mode, grads)
    rtol = 1e-2 if "compression" in kwargs else 1e-5
    np.testing.assert_allclose(g["w"].numpy(), EXPECTED_GRAD, rtol=rtol)
    np.testing.assert_allclose(g["b"].numpy(), [0.0])


def test_distributed_gradient_tape_groups_of_variables_and_sum():
    w, b = tf.Variable(W0), tf.Variable([1.0])
    x, y = shard(RANK)
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((x @ w - y) ** 2) + b[0] * (RANK + 1)
    tape = hvd.DistributedGradientTape(tape, op=hvd.Sum, groups=[[w, b]])
    gw, gb = tape.gradient(loss, [w, b])
    np.testing.assert_allclose(gw.numpy(), SIZE * EXPECTED_GRAD, rtol=1e-5)
    np.testing.assert_allclose(gb.numpy(), [sum(range(1, SIZE + 1))])


@pytest.mark.parametrize("sparse_as_dense", [False, True])
def test_distributed_gradient_tape_sparse(sparse_as_dense):
    table = tf.Variable(np.ones((SIZE + 1, 2), np.float32))
    with tf.GradientTape() as tape:
        rows = tf.gather(table, [RANK, RANK + 1])
        loss = tf.reduce_sum(rows * rank_values(RANK, (2, 2)))
    tape = hvd.DistributedGradientTape(tape, sparse_as_dense=sparse_as_dense)
    (g,) = tape.gradient(loss, [table])
    assert isinstance(g, tf.IndexedSlices) != sparse_as_dense
    expect = dense_of([rank_slices(r) for r in range(SIZE)]) / SIZE
    np.testing.assert_allclose(tf.convert_to_tensor(g).numpy(), expect,
                               rtol=1e-6)


# ---- tf.compat.v1: DistributedOptimizer, hook, global variables ----------

def _v1_graph(opt_kwargs=None):
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None, 3])
        y = tf.compat.v1.placeholder(tf.float32, [None, 1])
        # Different initial values per rank: the broadcast makes them equal.
        w = tf.compat.v1.get_variable(
            "w", initializer=tf.constant(W0 + RANK, tf.float32))
        loss = tf.reduce_mean((tf.matmul(x, w) - y) ** 2)
        opt = tf.compat.v1.train.GradientDescentOptimizer(0.1)
        opt = hvd.DistributedOptimizer(opt, **(opt_kwargs or {}))
        global_step = tf.compat.v1.train.get_or_create_global_step()
        train_op = opt.minimize(loss, global_step=global_step)
    return graph, x, y, w, train_op


def test_v1_distributed_optimizer_and_broadcast_global_variables():
    graph, x, y, w, train_op = _v1_graph()
    xs, ys = shard(RANK)
    with graph.as_default(), tf.compat.v1.Session(graph=graph) as sess:
        sess.run(tf.compat.v1.global_variables_initializer())
        sess.run(hvd.broadcast_global_variables(0))
        np.testing.assert_allclose(sess.run(w), W0)
        sess.run(train_op, feed_dict={x: xs, y: ys})
        np.testing.assert_allclose(sess.run(w), W0 - 0.1 * EXPECTED_GRAD,
                                   rtol=1e-5)
        # Objects through the session, in graph mode.
        assert hvd.broadcast_object(RANK, root_rank=0, session=sess) == 0
        assert hvd.allgather_object(RANK, session=sess) == list(range(SIZE))


def test_v1_monitored_training_session_with_hook():
    graph, x, y, w, train_op = _v1_graph({"sparse_as_dense": True})
    xs, ys = shard(RANK)
    with graph.as_default():
        # The classic script: pin the local rank's GPU (none here),
        # broadcast the initial variables from rank 0 through the hook.
        config = tf.compat.v1.ConfigProto()
        config.gpu_options.visible_device_list = str(hvd.local_rank())
        hooks = [hvd.BroadcastGlobalVariablesHook(0)]
        with tf.compat.v1.train.MonitoredTrainingSession(
                hooks=hooks, config=config) as sess:
            first = sess.run(w)
            for _ in range(3):
                sess.run(train_op, feed_dict={x: xs, y: ys})
            last = sess.run(w)
    np.testing.assert_allclose(first, W0)
    gathered = hvd.allgather_object(last.tolist())
    assert all(g == gathered[0] for g in gathered)


def test_broadcast_global_variables_refuses_eager():
    with pytest.raises(RuntimeError, match="broadcast_variables"):
        hvd.broadcast_global_variables(0)


def test_distributed_optimizer_refuses_other_objects():
    with pytest.raises(ValueError):
        hvd.DistributedOptimizer(object())


# ---- process sets -----------------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
def test_process_set_collectives(mode):
    if not FIRST.included():
        return
    out = run(mode, lambda t: (hvd.allreduce(t, op=hvd.Sum, process_set=FIRST),
                               hvd.allgather(t, process_set=FIRST)),
              tf.constant(ALL[RANK]))
    np.testing.assert_array_equal(out[0].numpy(), ALL[0])
    np.testing.assert_array_equal(out[1].numpy(), ALL[0])
    s = hvd.allreduce(rank_slices(RANK), process_set=FIRST)
    np.testing.assert_allclose(tf.convert_to_tensor(s).numpy(),
                               dense_of([rank_slices(0)]))
    assert hvd.broadcast_object("x", root_rank=0, process_set=FIRST) == "x"
    assert hvd.allgather_object(RANK, process_set=FIRST) == [0]


def test_process_set_gradient_tape():
    w = tf.Variable(W0)
    x, y = shard(RANK)
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((x @ w - y) ** 2)
    if not FIRST.included():
        return
    tape = hvd.DistributedGradientTape(tape, process_set=FIRST)
    np.testing.assert_allclose(tape.gradient(loss, w).numpy(),
                               local_grad(x, y), rtol=1e-6)
