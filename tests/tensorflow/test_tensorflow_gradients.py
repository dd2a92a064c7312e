"""The gradient of every horovod.tensorflow collective, with numbers, as
Horovod 0.28 defines them (horovod/tensorflow/mpi_ops.py), over all ranks
and over a process set without rank 0. Run under horovodrun -np 2 and -np
3. Each rank's upstream gradient differs (rank k sends G(k)), so a sum, an
average, a root's share or a row's way back each give other numbers; every
rank computes every rank's G(k) locally."""

import numpy as np
import pytest
import tensorflow as tf

import horovod.tensorflow as hvd

hvd.init(process_sets="dynamic")
RANK, SIZE = hvd.rank(), hvd.size()
# A set without rank 0: [1] on 2 ranks, [1, 2] on 3.
TAIL = hvd.add_process_set(list(range(1, SIZE)))
ROWS = 2 * SIZE  # rows of each input: divisible by any set size here


def G(k, rows=ROWS, cols=2):
    """Rank k's upstream gradient: distinct per rank, row and column."""
    return (np.arange(rows * cols, dtype=np.float64).reshape(rows, cols) +
            10.0 * (k + 1))


def X(k, rows=ROWS, cols=2):
    return np.full((rows, cols), float(k + 1))


def gradient_of(fn, x, upstream):
    """d/dx of sum(fn(x) * upstream): the gradient Horovod's registered
    backward gives for output gradient `upstream`."""
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = fn(x)
    return tape.gradient(y, x, output_gradients=upstream)


def members(process_set):
    return list(range(SIZE)) if process_set is None else process_set.ranks


def set_kwargs(process_set):
    return {} if process_set is None else {"process_set": process_set}


def check(got, expected):
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-6, atol=1e-6)


def mine(process_set):
    return members(process_set).index(RANK)


SETS = [None, TAIL]
SET_IDS = ["global", "tail"]


def in_set(process_set):
    return process_set is None or RANK in process_set.ranks


@pytest.mark.parametrize("process_set", SETS, ids=SET_IDS)
@pytest.mark.parametrize("mode", ["eager", "function"])
def test_allreduce_gradient_is_the_same_allreduce(process_set, mode):
    if not in_set(process_set):
        return
    ranks = members(process_set)
    kw = set_kwargs(process_set)
    x = tf.constant(X(RANK), tf.float32)
    g = tf.constant(G(RANK), tf.float32)

    def grads(x, g):
        return (gradient_of(lambda t: hvd._allreduce(t, op=hvd.Sum, **kw),
                            x, g),
                gradient_of(lambda t: hvd.allreduce(t, op=hvd.Average, **kw),
                            x, g),
                gradient_of(lambda t: hvd.allreduce(
                    t, op=hvd.Sum, prescale_factor=0.5, postscale_factor=3.0,
                    **kw), x, g))
    run = grads if mode == "eager" else tf.function(grads)
    total, average, scaled = run(x, g)
    everyone = np.sum([G(k) for k in ranks], axis=0)
    check(total, everyone)
    check(average, everyone / len(ranks))
    check(scaled, 3.0 * np.sum([0.5 * G(k) for k in ranks], axis=0))


@pytest.mark.parametrize("process_set", SETS, ids=SET_IDS)
def test_grouped_allreduce_gradient(process_set):
    if not in_set(process_set):
        return
    ranks = members(process_set)
    kw = set_kwargs(process_set)
    a = tf.constant(X(RANK), tf.float32)
    b = tf.constant(X(RANK, rows=3), tf.float32)
    with tf.GradientTape() as tape:
        tape.watch([a, b])
        ra, rb = hvd.grouped_allreduce([a, b], op=hvd.Average, **kw)
        loss = (tf.reduce_sum(ra * G(RANK)) +
                tf.reduce_sum(rb * G(RANK, rows=3) * 2.0))
    da, db = tape.gradient(loss, [a, b])
    check(da, np.mean([G(k) for k in ranks], axis=0))
    check(db, np.mean([2.0 * G(k, rows=3) for k in ranks], axis=0))


@pytest.mark.parametrize("process_set", SETS, ids=SET_IDS)
@pytest.mark.parametrize("mode", ["eager", "function"])
def test_allgather_gradient_is_my_rows_of_the_average(process_set, mode):
    if not in_set(process_set):
        return
    ranks = members(process_set)
    kw = set_kwargs(process_set)
    # Uneven rows: rank k gives k + 1 rows.
    rows = {k: k + 1 for k in ranks}
    total = sum(rows.values())
    x = tf.constant(X(RANK, rows=rows[RANK]), tf.float32)
    g = tf.constant(G(RANK, rows=total), tf.float32)

    def grad(x, g):
        return gradient_of(lambda t: hvd.allgather(t, **kw), x, g)
    run = grad if mode == "eager" else tf.function(grad)
    average = np.mean([G(k, rows=total) for k in ranks], axis=0)
    start = sum(rows[k] for k in ranks if k < RANK)
    check(run(x, g), average[start:start + rows[RANK]])


@pytest.mark.parametrize("process_set", SETS, ids=SET_IDS)
def test_grouped_allgather_gradient(process_set):
    if not in_set(process_set):
        return
    ranks = members(process_set)
    kw = set_kwargs(process_set)
    n = len(ranks)
    a = tf.constant(X(RANK, rows=1), tf.float32)
    b = tf.constant(X(RANK, rows=2), tf.float32)
    with tf.GradientTape() as tape:
        tape.watch([a, b])
        ga, gb = hvd.grouped_allgather([a, b], **kw)
        loss = (tf.reduce_sum(ga * G(RANK, rows=n)) +
                tf.reduce_sum(gb * G(RANK, rows=2 * n)))
    da, db = tape.gradient(loss, [a, b])
    me = mine(process_set)
    check(da, np.mean([G(k, rows=n) for k in ranks], axis=0)[me:me + 1])
    check(db, np.mean([G(k, rows=2 * n) for k in ranks],
                      axis=0)[2 * me:2 * me + 2])


@pytest.mark.parametrize("mode", ["eager", "function"])
@pytest.mark.parametrize("root", [0, "last"])
def test_broadcast_gradient_is_the_average_on_the_root(mode, root):
    """(Over a process set: test_tensorflow_scaling_and_roots.py, where the
    root is a global rank.)"""
    root = SIZE - 1 if root == "last" else root
    x = tf.constant(X(RANK), tf.float32)
    g = tf.constant(G(RANK), tf.float32)

    def grad(x, g):
        return gradient_of(lambda t: hvd.broadcast(t, root), x, g)
    run = grad if mode == "eager" else tf.function(grad)
    average = np.mean([G(k) for k in range(SIZE)], axis=0)
    check(run(x, g), average if RANK == root else np.zeros_like(average))


def test_broadcast_gradient_root_zero_two_ranks_is_one():
    """The case of the report: on 2 ranks, upstream ones, the root's
    gradient is the average 1.0 (not the sum 2.0)."""
    x = tf.ones([3])
    grad = gradient_of(lambda t: hvd.broadcast(t, 0), x, tf.ones([3]))
    check(grad, np.full([3], 1.0 if RANK == 0 else 0.0))


@pytest.mark.parametrize("process_set", SETS, ids=SET_IDS)
@pytest.mark.parametrize("mode", ["eager", "function"])
def test_alltoall_gradient_goes_back_the_way_it_came(process_set, mode):
    if not in_set(process_set):
        return
    ranks = members(process_set)
    kw = set_kwargs(process_set)
    n = len(ranks)
    # Rank k sends j + 1 rows to the set's j-th rank.
    sends = [j + 1 for j in range(n)]
    me = mine(process_set)
    received = sum([me + 1] * n)
    x = tf.constant(X(RANK, rows=sum(sends)), tf.float32)
    g = tf.constant(G(RANK, rows=received), tf.float32)

    def grad(x, g):
        return gradient_of(
            lambda t: hvd.alltoall(t, splits=sends, **kw)[0], x, g)
    run = grad if mode == "eager" else tf.function(grad)
    # My j + 1 rows sent to the set's j-th rank come back from its
    # gradient: the rows it received from me, its me-th block of j + 1.
    expected = np.concatenate([
        G(ranks[j], rows=n * (j + 1))[me * (j + 1):(me + 1) * (j + 1)]
        for j in range(n)])
    check(run(x, g), expected)


@pytest.mark.parametrize("process_set", SETS, ids=SET_IDS)
@pytest.mark.parametrize("op,factor", [(hvd.Sum, "size"), (hvd.Average, 1)])
def test_reducescatter_gradient_is_the_scaled_allgather(process_set, op,
                                                        factor):
    if not in_set(process_set):
        return
    ranks = members(process_set)
    kw = set_kwargs(process_set)
    n = len(ranks)
    scale = n if factor == "size" else 1
    x = tf.constant(X(RANK), tf.float32)
    part = ROWS // n
    g = tf.constant(G(RANK, rows=part), tf.float32)
    grad = gradient_of(lambda t: hvd.reducescatter(t, op=op, **kw), x, g)
    check(grad, np.concatenate([scale * G(k, rows=part) for k in ranks]))
    scaled = gradient_of(lambda t: hvd.reducescatter(
        t, op=op, prescale_factor=0.5, postscale_factor=3.0, **kw), x, g)
    check(scaled, np.concatenate([scale * 0.5 * 3.0 * G(k, rows=part)
                                  for k in ranks]))


@pytest.mark.parametrize("process_set", SETS, ids=SET_IDS)
def test_grouped_reducescatter_gradient(process_set):
    if not in_set(process_set):
        return
    ranks = members(process_set)
    kw = set_kwargs(process_set)
    n = len(ranks)
    part = ROWS // n
    a = tf.constant(X(RANK), tf.float32)
    b = tf.constant(X(RANK), tf.float32)
    with tf.GradientTape() as tape:
        tape.watch([a, b])
        sa, sb = hvd.grouped_reducescatter([a, b], op=hvd.Sum, **kw)
        loss = (tf.reduce_sum(sa * G(RANK, rows=part)) +
                tf.reduce_sum(sb * 2.0 * G(RANK, rows=part)))
    da, db = tape.gradient(loss, [a, b])
    check(da, np.concatenate([n * G(k, rows=part) for k in ranks]))
    check(db, np.concatenate([n * 2.0 * G(k, rows=part) for k in ranks]))
    with tf.GradientTape() as tape:
        tape.watch(a)
        (sa,) = hvd.grouped_reducescatter([a], op=hvd.Average, **kw)
        loss = tf.reduce_sum(sa * G(RANK, rows=part))
    check(tape.gradient(loss, a),
          np.concatenate([G(k, rows=part) for k in ranks]))
