"""horovod.tensorflow.mpi_ops, the op library's ops, in the spirit of
Horovod's test/parallel/test_tensorflow.py: every op eagerly and inside
tf.function, every CPU dtype, zero-length and prime-length tensors, scale
factors, reduction ops, process sets, gradients and the error cases. Run
under horovodrun -np 2 and -np 3; every rank runs the same tests in the same
order, so collectives pair up, and every rank can recompute every rank's
input, so expected results are computed locally."""

import numpy as np
import pytest
import tensorflow as tf

import horovod.tensorflow.mpi_ops as hvd

hvd.init(process_sets="dynamic")
RANK, SIZE = hvd.rank(), hvd.size()

ALL_DTYPES = [tf.uint8, tf.int8, tf.uint16, tf.int16, tf.int32, tf.int64,
              tf.float16, tf.bfloat16, tf.float32, tf.float64, tf.bool]
NUMERIC_DTYPES = [d for d in ALL_DTYPES if d != tf.bool]
FLOAT_DTYPES = [tf.float16, tf.bfloat16, tf.float32, tf.float64]
# Zero-length, prime-length, scalar and higher-rank shapes.
SHAPES = [[], [0], [7], [13, 2], [0, 3], [3, 5, 2]]


def multi_rank(fn):
    return pytest.mark.skipif(SIZE < 2, reason="needs 2 or more ranks")(fn)


def rank_array(rank, shape, dtype, seed, high=4):
    rng = np.random.RandomState(seed * 1009 + rank)
    values = rng.randint(0, high, size=shape)
    if dtype == tf.bool:
        return values % 2 == 1
    return values.astype(np.float64 if dtype.is_floating else np.int64)


def rank_tensor(rank, shape, dtype, seed, high=4):
    return tf.cast(tf.constant(rank_array(rank, shape, dtype, seed, high)),
                   dtype)


def every_rank(shape, dtype, seed, high=4, ranks=None):
    ranks = range(SIZE) if ranks is None else ranks
    return [rank_array(r, shape, dtype, seed, high) for r in ranks]


def check(got, expected, dtype):
    got = got.numpy()
    if dtype in (tf.float16, tf.bfloat16):
        np.testing.assert_allclose(got.astype(np.float64), expected,
                                   rtol=2e-2, atol=2e-2)
    elif dtype.is_floating:
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)
    else:
        np.testing.assert_array_equal(got, np.asarray(expected).astype(
            dtype.as_numpy_dtype))


def both_modes(fn):
    """fn run eagerly and as a tf.function (its arguments then are the
    function's inputs, so nothing is folded at trace time; shapes are
    relaxed, so a test's shapes share few traces)."""
    return [fn, tf.function(fn, reduce_retracing=True)]


MODES = ["eager", "function"]

REDUCTIONS = {
    hvd.Sum: lambda xs: np.sum(xs, axis=0),
    hvd.Min: lambda xs: np.min(xs, axis=0),
    hvd.Max: lambda xs: np.max(xs, axis=0),
    hvd.Product: lambda xs: np.prod(xs, axis=0),
}


# ---- layout ---------------------------------------------------------------

def test_layout_and_queries():
    assert hvd.is_initialized()
    assert 0 <= RANK < SIZE and 0 <= hvd.local_rank() < hvd.local_size()
    assert 0 <= hvd.cross_rank() < hvd.cross_size()
    assert hvd.is_homogeneous() is True

    def queries():
        return (hvd.size_op(), hvd.local_size_op(), hvd.rank_op(),
                hvd.local_rank_op(), hvd.process_set_included_op())

    for run in both_modes(queries):
        assert [int(v) for v in run()] == [SIZE, hvd.local_size(), RANK,
                                           hvd.local_rank(), 1]


# ---- allreduce ------------------------------------------------------------

def small_values(dtype):
    return 3 if dtype in (tf.int8, tf.uint8, tf.float16) else 4


@pytest.mark.parametrize("mode", MODES)
def test_allreduce_every_op_and_dtype(mode):
    """Every dtype in one call, so a function is traced once per rank of
    the shapes, not once per dtype."""
    def reduce_all(*xs):
        return [[hvd._allreduce(x, op=op, name=f"reduce_{op}_{i}")
                 for op in REDUCTIONS] for i, x in enumerate(xs)]

    run = both_modes(reduce_all)[MODES.index(mode)]
    for i, shape in enumerate(SHAPES):
        got = run(*[rank_tensor(RANK, shape, d, 10 * i + k, small_values(d))
                    for k, d in enumerate(NUMERIC_DTYPES)])
        for k, (dtype, outs) in enumerate(zip(NUMERIC_DTYPES, got)):
            inputs = every_rank(shape, dtype, 10 * i + k, small_values(dtype))
            for out, reduce in zip(outs, REDUCTIONS.values()):
                assert out.dtype == dtype and out.shape == shape
                check(out, reduce(inputs), dtype)


@pytest.mark.parametrize("mode", MODES)
def test_allreduce_average_and_scale(mode):
    def reduce(*xs):
        return [(hvd._allreduce(x, op=hvd.Average, name=f"avg_{i}"),
                 hvd._allreduce(x, op=hvd.Sum, prescale_factor=0.5,
                                postscale_factor=3.0, name=f"scaled_{i}"))
                for i, x in enumerate(xs)]

    run = both_modes(reduce)[MODES.index(mode)]
    got = run(*[rank_tensor(RANK, [11, 3], d, 7) for d in FLOAT_DTYPES])
    for dtype, (avg, scaled) in zip(FLOAT_DTYPES, got):
        total = np.sum(every_rank([11, 3], dtype, 7), axis=0)
        check(avg, total / SIZE, dtype)
        check(scaled, total * 1.5, dtype)


@pytest.mark.skipif(not hvd.check_num_rank_power_of_2(SIZE),
                    reason="Adasum needs a power-of-two number of ranks")
def test_adasum_of_identical_tensors_is_the_tensor():
    x = tf.constant([1.0, -2.0, 3.0, 0.5])
    check(hvd._allreduce(x, op=hvd.Adasum), x.numpy(), tf.float32)


@pytest.mark.parametrize("mode", MODES)
def test_grouped_allreduce(mode):
    shapes = [[3], [0], [2, 5], []]

    def reduce(*xs):
        return hvd._grouped_allreduce(list(xs), op=hvd.Sum)

    run = both_modes(reduce)[MODES.index(mode)]
    outs = run(*[rank_tensor(RANK, s, tf.float32, 40 + i)
                 for i, s in enumerate(shapes)])
    assert len(outs) == len(shapes)
    for i, (out, s) in enumerate(zip(outs, shapes)):
        check(out, np.sum(every_rank(s, tf.float32, 40 + i), axis=0),
              tf.float32)


def test_function_ops_match_by_name_in_any_order():
    """Twelve allreduces in one graph, created in opposite orders on
    alternate ranks: the kernels run in whatever order TF picks, and the
    ranks still pair them by name."""
    order = list(range(12)) if RANK % 2 == 0 else list(reversed(range(12)))

    @tf.function
    def many(x):
        outs = {}
        for i in order:
            outs[i] = hvd._allreduce(x * float(i), name=f"any_order_{i}")
        return [outs[i] for i in range(12)]

    outs = many(tf.ones([4]))
    for i, out in enumerate(outs):
        check(out, np.full([4], float(i * SIZE)), tf.float32)


# ---- allgather ------------------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
def test_allgather_uneven_rows_every_dtype(mode):
    def gather(*xs):
        return [hvd.allgather(x, name=f"gather_{i}") for i, x in enumerate(xs)]

    run = both_modes(gather)[MODES.index(mode)]
    for tail in ([], [3], [2, 2]):
        # Rank r has r rows: zero-length on rank 0.
        got = run(*[rank_tensor(RANK, [RANK] + tail, d, k + 50 * len(tail))
                    for k, d in enumerate(ALL_DTYPES)])
        for k, (dtype, out) in enumerate(zip(ALL_DTYPES, got)):
            expected = np.concatenate(
                [rank_array(r, [r] + tail, dtype, k + 50 * len(tail))
                 for r in range(SIZE)])
            assert out.dtype == dtype
            assert out.shape == [SIZE * (SIZE - 1) // 2] + tail
            check(out, expected, dtype)


def test_allgather_static_shape_in_graph():
    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32)])
    def gather(x):
        out = hvd.allgather(x)
        assert out.shape.as_list() == [None, 3]
        return out

    assert gather(tf.ones([2, 3])).shape == [2 * SIZE, 3]


@pytest.mark.parametrize("mode", MODES)
def test_grouped_allgather(mode):
    def gather(a, b):
        return hvd.grouped_allgather([a, b])

    run = both_modes(gather)[MODES.index(mode)]
    a, b = run(rank_tensor(RANK, [RANK + 1, 2], tf.int32, 60),
               rank_tensor(RANK, [2], tf.int32, 61))
    check(a, np.concatenate([rank_array(r, [r + 1, 2], tf.int32, 60)
                             for r in range(SIZE)]), tf.int32)
    check(b, np.concatenate(every_rank([2], tf.int32, 61)), tf.int32)


# ---- broadcast ------------------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
def test_broadcast_every_root_and_dtype(mode):
    def bcast(*xs):
        return [[hvd.broadcast(x, root, name=f"bcast_{root}_{i}")
                 for root in range(SIZE)] for i, x in enumerate(xs)]

    run = both_modes(bcast)[MODES.index(mode)]
    for shape in ([], [0], [7, 2]):
        got = run(*[rank_tensor(RANK, shape, d, k + 70 + len(shape))
                    for k, d in enumerate(ALL_DTYPES)])
        for k, (dtype, outs) in enumerate(zip(ALL_DTYPES, got)):
            for root, out in enumerate(outs):
                check(out, rank_array(root, shape, dtype, k + 70 + len(shape)),
                      dtype)


# ---- alltoall -------------------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
def test_alltoall_with_splits_every_dtype(mode):
    # Rank r sends (r + p) % 3 rows to rank p.
    def sent(r):
        return [(r + p) % 3 for p in range(SIZE)]

    def exchange(splits, *xs):
        return [hvd.alltoall(x, splits=splits, name=f"alltoall_{i}")
                for i, x in enumerate(xs)]

    run = both_modes(exchange)[MODES.index(mode)]
    got = run(tf.constant(sent(RANK), tf.int32),
              *[rank_tensor(RANK, [sum(sent(RANK)), 2], d, 80 + k)
                for k, d in enumerate(ALL_DTYPES)])
    for k, (dtype, (out, received)) in enumerate(zip(ALL_DTYPES, got)):
        assert received.dtype == tf.int32
        assert received.numpy().tolist() == [sent(r)[RANK]
                                             for r in range(SIZE)]
        pieces = []
        for r in range(SIZE):
            theirs = rank_array(r, [sum(sent(r)), 2], dtype, 80 + k)
            start = sum(sent(r)[:RANK])
            pieces.append(theirs[start:start + sent(r)[RANK]])
        check(out, np.concatenate(pieces), dtype)


def test_alltoall_equal_split():
    x = rank_tensor(RANK, [2 * SIZE, 3], tf.float64, 90)
    out = hvd.alltoall(x)
    assert not isinstance(out, tuple)
    expected = np.concatenate([rank_array(r, [2 * SIZE, 3], tf.float64,
                                          90)[2 * RANK:2 * RANK + 2]
                               for r in range(SIZE)])
    check(out, expected, tf.float64)


# ---- reducescatter ---------------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
def test_reducescatter_uneven_rows_every_dtype(mode):
    def scatter(*xs):
        return [(hvd._reducescatter(x, op=hvd.Sum, name=f"rs_sum_{i}"),
                 hvd._reducescatter(x, op=hvd.Max, name=f"rs_max_{i}"))
                for i, x in enumerate(xs)]

    run = both_modes(scatter)[MODES.index(mode)]
    rows = 2 * SIZE + 1  # the first rank gets one row more
    start = sum(rows // SIZE + (1 if r < rows % SIZE else 0)
                for r in range(RANK))
    count = rows // SIZE + (1 if RANK < rows % SIZE else 0)
    got = run(*[rank_tensor(RANK, [rows, 2], d, 100 + k, small_values(d))
                for k, d in enumerate(NUMERIC_DTYPES)])
    for k, (dtype, (total, biggest)) in enumerate(zip(NUMERIC_DTYPES, got)):
        inputs = every_rank([rows, 2], dtype, 100 + k, small_values(dtype))
        check(total, np.sum(inputs, axis=0)[start:start + count], dtype)
        check(biggest, np.max(inputs, axis=0)[start:start + count], dtype)


@pytest.mark.parametrize("mode", MODES)
def test_reducescatter_average_scaled_and_grouped(mode):
    def scatter(a, b):
        avg = hvd._reducescatter(a, op=hvd.Average, prescale_factor=2.0,
                                 postscale_factor=0.5)
        grouped = hvd._grouped_reducescatter([a, b], op=hvd.Sum)
        return avg, grouped

    run = both_modes(scatter)[MODES.index(mode)]
    a = rank_tensor(RANK, [SIZE, 3], tf.float32, 110)
    b = rank_tensor(RANK, [2 * SIZE], tf.float32, 111)
    avg, (ga, gb) = run(a, b)
    sum_a = np.sum(every_rank([SIZE, 3], tf.float32, 110), axis=0)
    sum_b = np.sum(every_rank([2 * SIZE], tf.float32, 111), axis=0)
    check(avg, sum_a[RANK:RANK + 1] / SIZE, tf.float32)
    check(ga, sum_a[RANK:RANK + 1], tf.float32)
    check(gb, sum_b[2 * RANK:2 * RANK + 2], tf.float32)


# ---- join, barrier -----------------------------------------------------------

@multi_rank
def test_join_last_rank_reduces_alone():
    last = SIZE - 1
    if RANK == last:
        # The others have joined (or will): they contribute zeros.
        got = hvd._allreduce(tf.fill([3], 5.0), name="join.lone")
        check(got, np.full([3], 5.0), tf.float32)
    joined = hvd.join()
    assert joined.dtype == tf.int32 and joined.shape == []
    assert int(joined) == last
    hvd.barrier()


def test_barrier_in_a_function():
    @tf.function
    def wait():
        hvd.barrier()
        return hvd.rank_op()

    assert int(wait()) == RANK


# ---- process sets --------------------------------------------------------------

@multi_rank
def test_process_set_collectives():
    """A set without rank 0: [1] on 2 ranks, [1, 2] on 3."""
    members = list(range(1, SIZE))
    n = len(members)
    subset = hvd.add_process_set(members)
    subset_id = subset.process_set_id
    try:
        def ops(x):
            return (hvd._allreduce(x, process_set=subset, name="ps_sum"),
                    hvd.allgather(x, process_set=subset, name="ps_gather"),
                    hvd.broadcast(x, members[-1], process_set=subset,
                                  name="ps_bcast"),
                    hvd._reducescatter(x, op=hvd.Sum, process_set=subset,
                                      name="ps_scatter"),
                    hvd.alltoall(x, process_set=subset, name="ps_alltoall"),
                    hvd.size_op(subset.process_set_id),
                    hvd.process_set_included_op(subset.process_set_id))

        if RANK in members:
            me = members.index(RANK)
            assert subset.rank() == me and subset.size() == n
            rows = 2 * n
            inputs = every_rank([rows], tf.float32, 120, ranks=members)
            for run in both_modes(ops):
                x = rank_tensor(RANK, [rows], tf.float32, 120)
                total, gathered, bcast, scattered, swapped, size, inc = \
                    run(x)
                check(total, np.sum(inputs, axis=0), tf.float32)
                check(gathered, np.concatenate(inputs), tf.float32)
                check(bcast, inputs[-1], tf.float32)
                check(scattered, np.sum(inputs, axis=0)[2 * me:2 * me + 2],
                      tf.float32)
                check(swapped, np.concatenate(
                    [i[2 * me:2 * me + 2] for i in inputs]), tf.float32)
                assert int(size) == n and int(inc) == 1
        else:
            assert int(hvd.process_set_included_op(
                subset.process_set_id)) == 0
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match="not a member"):
                hvd._allreduce(tf.ones([2]), process_set=subset)
    finally:
        hvd.barrier()
        hvd.remove_process_set(subset)
    with pytest.raises(tf.errors.FailedPreconditionError,
                       match="does not exist"):
        hvd.size_op(subset_id)


def test_unregistered_process_set_is_refused():
    with pytest.raises(ValueError, match="not registered"):
        hvd._allreduce(tf.ones([2]), process_set=hvd.ProcessSet([0]))


# ---- gradients ----------------------------------------------------------------

def gradient(fn, x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = fn(x)
    return tape.gradient(y, x, output_gradients=tf.ones_like(y))


GRADIENT_CASES = {
    # The allreduce of the gradient.
    "allreduce": (lambda x: hvd._allreduce(x, op=hvd.Sum),
                  lambda: np.full([4, 2], float(SIZE))),
    "average": (lambda x: hvd._allreduce(x, op=hvd.Average),
                lambda: np.ones([4, 2])),
    # This rank's rows of the averaged gradient.
    "allgather": (lambda x: hvd.allgather(x), lambda: np.ones([4, 2])),
    # The averaged gradient on the root, zero elsewhere.
    "broadcast": (lambda x: hvd.broadcast(x, 0),
                  lambda: np.ones([4, 2]) * (1.0 if RANK == 0 else 0.0)),
    # The gradient sent back.
    "alltoall": (lambda x: hvd.alltoall(x, splits=[4 // SIZE] * (SIZE - 1) +
                                        [4 - (4 // SIZE) * (SIZE - 1)])[0],
                 lambda: np.ones([4, 2])),
    # The allgather of the gradients, times the set size for Sum.
    "reducescatter_sum": (lambda x: hvd._reducescatter(x, op=hvd.Sum),
                          lambda: np.full([4, 2], float(SIZE))),
    "reducescatter_avg": (lambda x: hvd._reducescatter(x, op=hvd.Average),
                          lambda: np.ones([4, 2])),
}


# Traced gradients of the ops whose gradients run collectives of their own.
FUNCTION_GRADIENT_CASES = ["allreduce", "allgather", "broadcast", "alltoall"]


@pytest.mark.parametrize("mode", MODES)
def test_gradients(mode):
    cases = (list(GRADIENT_CASES) if mode == "eager"
             else FUNCTION_GRADIENT_CASES)

    def all_gradients(x):
        return [gradient(GRADIENT_CASES[c][0], x) for c in cases]

    run = both_modes(all_gradients)[MODES.index(mode)]
    grads = run(tf.constant(rank_array(RANK, [4, 2], tf.float32, 130),
                            tf.float32))
    for case, grad in zip(cases, grads):
        assert grad is not None, case
        check(grad, GRADIENT_CASES[case][1](), tf.float32)


@pytest.mark.parametrize("mode", MODES)
def test_grouped_gradients(mode):
    def grads(a, b):
        with tf.GradientTape() as tape:
            tape.watch([a, b])
            ra, rb = hvd._grouped_allreduce([a, b], op=hvd.Sum)
            ga, gb = hvd.grouped_allgather([a, b])
            sa, sb = hvd._grouped_reducescatter([a, b], op=hvd.Average)
            loss = (tf.reduce_sum(ra) + tf.reduce_sum(rb) +
                    tf.reduce_sum(ga) + tf.reduce_sum(gb) +
                    tf.reduce_sum(sa) + tf.reduce_sum(sb))
        return tape.gradient(loss, [a, b])

    run = both_modes(grads)[MODES.index(mode)]
    da, db = run(tf.ones([SIZE, 2]), tf.ones([2 * SIZE]))
    # allreduce: SIZE; allgather: 1; reducescatter (Average): 1.
    check(da, np.full([SIZE, 2], SIZE + 2.0), tf.float32)
    check(db, np.full([2 * SIZE], SIZE + 2.0), tf.float32)


# ---- errors -------------------------------------------------------------------

def expect_failure(fn, *words, error=tf.errors.FailedPreconditionError):
    with pytest.raises(error) as info:
        fn()
    text = str(info.value)
    for w in words:
        assert w in text, text


@multi_rank
@pytest.mark.parametrize("mode", MODES)
def test_shape_mismatch_fails_every_rank(mode):
    run = both_modes(lambda x: hvd._allreduce(x, name="bad_shape"))[
        MODES.index(mode)]
    x = tf.ones([3 + (1 if RANK == 0 else 0)])
    expect_failure(lambda: run(x), "shape",
                   "bad_shape" if mode == "function" else "")


@multi_rank
@pytest.mark.parametrize("mode", MODES)
def test_dtype_mismatch_fails_every_rank(mode):
    run = both_modes(lambda x: hvd.allgather(x, name="bad_dtype"))[
        MODES.index(mode)]
    x = tf.ones([2], tf.float32 if RANK == 0 else tf.float64)
    expect_failure(lambda: run(x), "dtype",
                   "bad_dtype" if mode == "function" else "")


@multi_rank
def test_root_and_op_mismatch_fail_every_rank():
    @tf.function
    def bad_root(x):
        return hvd.broadcast(x, RANK, name="bad_root")

    @tf.function
    def bad_op(x):
        return hvd._allreduce(x, op=hvd.Sum if RANK == 0 else hvd.Max,
                              name="bad_op")

    expect_failure(lambda: bad_root(tf.ones([2])), "bad_root")
    expect_failure(lambda: bad_op(tf.ones([2])), "bad_op")
    # The runtime carries on.
    check(hvd._allreduce(tf.ones([2])), np.full([2], float(SIZE)),
          tf.float32)


def test_unsupported_dtype_is_refused():
    with pytest.raises((TypeError, tf.errors.InvalidArgumentError)):
        hvd._allreduce(tf.constant(["a", "b"]))
    with pytest.raises((TypeError, tf.errors.InvalidArgumentError)):
        hvd.allgather(tf.constant([1], tf.uint32))


def test_invalid_arguments_are_refused():
    # A root outside the set is refused at the call, as Horovod does.
    expect_failure(lambda: hvd.broadcast(tf.ones([2]), SIZE),
                   "invalid root rank", error=ValueError)
    expect_failure(lambda: hvd.alltoall(tf.ones([3]), splits=[5] * SIZE),
                   "splits", error=tf.errors.InvalidArgumentError)
