"""horovod.mxnet's collectives: every op on every CPU dtype MXNet has,
names, process sets, and the errors every rank sees. Run under horovodrun
on 1, 2 and 3 ranks."""

import mxnet as mx
import numpy as np
import pytest

import horovod.mxnet as hvd
from conftest import (ALL_DTYPES, FLOAT_DTYPES, NUMERIC_DTYPES, close,
                      every_rank, rank_array, rank_values)

hvd.init()
RANK, SIZE = hvd.rank(), hvd.size()
DIMS = [1, 2, 3]
TOTAL = SIZE * (SIZE + 1) // 2  # sum of (rank + 1)


def shape_of(dim, n=5):
    return (n,) * dim


def multi_rank(fn):
    return pytest.mark.skipif(SIZE < 2, reason="needs 2 or more ranks")(fn)


def ids(dtypes):
    return [np.dtype(d).name for d in dtypes]


# ---- basics ------------------------------------------------------------------

def test_layout():
    assert hvd.is_initialized()
    assert 0 <= RANK < SIZE
    assert 0 <= hvd.local_rank() < hvd.local_size()
    assert hvd.cross_size() >= 1 and hvd.cross_rank() >= 0
    # Horovod's types: nccl_built() is NCCL's version code (0 when not
    # built), the others are bools.
    for q in (hvd.mpi_built, hvd.gloo_built, hvd.ddl_built, hvd.ccl_built,
              hvd.cuda_built, hvd.rocm_built, hvd.mpi_enabled,
              hvd.gloo_enabled):
        assert isinstance(q(), bool), q.__name__
    nccl = hvd.nccl_built()
    assert type(nccl) is int and nccl >= 0
    assert len({hvd.Average, hvd.Sum, hvd.Adasum, hvd.Min, hvd.Max,
                hvd.Product}) == 6


def test_errors_are_mxnet_errors():
    assert issubclass(hvd.HorovodInternalError, mx.base.MXNetError)
    from horovod.common.exceptions import HorovodInternalError
    assert issubclass(hvd.HorovodInternalError, HorovodInternalError)


# ---- allreduce ---------------------------------------------------------------

REDUCTIONS = {
    hvd.Sum: lambda vs: np.sum(np.stack(vs).astype(np.float64), 0),
    hvd.Min: lambda vs: np.min(np.stack(vs).astype(np.float64), 0),
    hvd.Max: lambda vs: np.max(np.stack(vs).astype(np.float64), 0),
    hvd.Product: lambda vs: np.prod(np.stack(vs).astype(np.float64), 0),
}


@pytest.mark.parametrize("dtype", NUMERIC_DTYPES, ids=ids(NUMERIC_DTYPES))
@pytest.mark.parametrize("op", list(REDUCTIONS),
                         ids=["sum", "min", "max", "product"])
def test_allreduce_ops(dtype, op):
    for dim in DIMS:
        seed = 100 * dim + op
        low, high = (1, 3) if op == hvd.Product else (0, 4)
        array = rank_array(RANK, shape_of(dim), dtype, seed, low, high)
        before = array.asnumpy().copy()
        result = hvd.allreduce(array, op=op)
        expected = REDUCTIONS[op](every_rank(shape_of(dim), dtype, seed,
                                             low=low, high=high))
        assert result.shape == array.shape
        assert close(result, expected, dtype)
        assert np.array_equal(array.asnumpy(), before), \
            "allreduce modified its input"


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + [np.int32, np.int64],
                         ids=ids(FLOAT_DTYPES + [np.int32, np.int64]))
def test_allreduce_average(dtype):
    for dim in DIMS:
        # Multiples of SIZE average to integers exactly.
        values = [v * SIZE for v in every_rank(shape_of(dim), dtype, dim)]
        mine = mx.nd.array(values[RANK], dtype=dtype)
        expected = np.sum(np.stack(values).astype(np.float64), 0) / SIZE
        assert close(hvd.allreduce(mine), expected, dtype)  # the default
        assert close(hvd.allreduce(mine, op=hvd.Average), expected, dtype)
        assert close(hvd.allreduce(mine, average=True), expected, dtype)


def test_allreduce_average_argument():
    a = mx.nd.ones((4,)) * (RANK + 1)
    assert close(hvd.allreduce(a, average=False), np.full(4, TOTAL),
                 np.float32)
    with pytest.raises(ValueError):
        hvd.allreduce(a, average=True, op=hvd.Sum)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16,
                                   np.int32],
                         ids=ids([np.float32, np.float64, np.float16,
                                  np.int32]))
def test_allreduce_prescale_postscale(dtype):
    a = mx.nd.ones((3, 4), dtype=dtype) * (RANK + 1)
    floating = np.dtype(dtype).kind == "f"
    out = hvd.allreduce(a, op=hvd.Sum, prescale_factor=2.0,
                        postscale_factor=0.5 if floating else 1.0)
    expected = TOTAL * (1.0 if floating else 2.0)
    assert close(out, np.full((3, 4), expected), dtype)


def test_allreduce_bool():
    mine = rank_array(RANK, (17,), np.bool_, 7, 0, 2)
    everyone = np.stack(every_rank((17,), np.bool_, 7, low=0, high=2))
    assert close(hvd.allreduce(mine, op=hvd.Max), everyone.any(0), np.bool_)
    assert close(hvd.allreduce(mine, op=hvd.Min), everyone.all(0), np.bool_)
    with pytest.raises(ValueError):
        hvd.allreduce(mine)  # bool cannot be averaged


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=ids(ALL_DTYPES))
def test_allreduce_in_place(dtype):
    op = hvd.Max if dtype is np.bool_ else hvd.Sum
    a = mx.nd.ones((2, 3), dtype=dtype) * (RANK + 1) if dtype is not np.bool_ \
        else mx.nd.ones((2, 3), dtype=dtype)
    out = hvd.allreduce_(a, op=op)
    assert out is a
    want = 1 if dtype is np.bool_ else TOTAL
    assert close(a, np.full((2, 3), want), dtype)


def test_allreduce_waits_for_pending_engine_work():
    # The input is still being computed by MXNet's engine, and the engine
    # queues reads of the result: both must see the core's complete work.
    a = mx.nd.ones((256, 256))
    for _ in range(20):
        a = mx.nd.dot(a, mx.nd.ones((256, 256)) / 256.0) + 1
    expected = a.asnumpy() * SIZE
    b = mx.nd.zeros((256, 256))
    b[:] = a  # queued
    hvd.allreduce_(b, op=hvd.Sum)
    c = b * 2  # queued after the core has written b
    assert np.allclose(c.asnumpy(), 2 * expected)


def test_allreduce_of_a_slice():
    base = mx.nd.arange(24).reshape((4, 6)) * (RANK + 1)
    rows = base[1:3]
    out = hvd.allreduce(rows, op=hvd.Sum)
    expected = np.arange(24).reshape(4, 6)[1:3] * TOTAL
    assert np.allclose(out.asnumpy(), expected)


def test_allreduce_compression_fp16():
    a = mx.nd.ones((5,), dtype=np.float64) * (RANK + 1)
    compressed, ctx = hvd.Compression.fp16.compress(a)
    assert compressed.dtype == np.float16
    reduced = hvd.allreduce(compressed, op=hvd.Sum)
    out = hvd.Compression.fp16.decompress(reduced, ctx)
    assert close(out, np.full(5, TOTAL), np.float64)
    same, none = hvd.Compression.none.compress(a)
    assert same is a and none is None


@multi_rank
def test_allreduce_shape_mismatch():
    a = mx.nd.ones((RANK + 1, RANK + 1))
    with pytest.raises(hvd.HorovodInternalError, match="shape"):
        hvd.allreduce(a)


@multi_rank
def test_allreduce_dtype_mismatch():
    a = mx.nd.ones((3,), dtype=np.int32 if RANK % 2 == 0 else np.float32)
    with pytest.raises(mx.base.MXNetError):
        hvd.allreduce(a, op=hvd.Sum)


@multi_rank
def test_allreduce_op_mismatch():
    with pytest.raises(mx.base.MXNetError):
        hvd.allreduce(mx.nd.ones((3,)), op=hvd.Sum if RANK == 0 else hvd.Max)


@multi_rank
def test_prescale_mismatch():
    with pytest.raises(mx.base.MXNetError):
        hvd.allreduce(mx.nd.ones((3,)), op=hvd.Sum,
                      prescale_factor=1.0 + RANK)


@multi_rank
def test_default_names():
    # Unnamed ops are named as Horovod names them; a mismatch shows it.
    with pytest.raises(mx.base.MXNetError, match=r"allreduce\.noname\.\d+"):
        hvd.allreduce(mx.nd.ones((RANK + 1,)))
    with pytest.raises(mx.base.MXNetError, match=r"allreduce\.myname"):
        hvd.allreduce(mx.nd.ones((RANK + 1,)), name="myname")
    with pytest.raises(mx.base.MXNetError, match=r"allgather\.noname\.\d+"):
        hvd.allgather(mx.nd.ones((2, RANK + 1)))
    with pytest.raises(mx.base.MXNetError, match=r"broadcast\.b"):
        hvd.broadcast(mx.nd.ones((RANK + 1,)), 0, name="b")


def test_argument_errors():
    with pytest.raises(ValueError, match="NDArray"):
        hvd.allreduce(np.ones(2))
    with pytest.raises(ValueError):
        hvd.allreduce(mx.nd.ones((2,)), op=42)
    with pytest.raises(mx.base.MXNetError):
        hvd.alltoall(mx.nd.ones((SIZE * 2,)), splits=[1] * SIZE)
    with pytest.raises(ValueError):
        hvd.broadcast(mx.nd.ones((2,)), SIZE)  # not a rank
    with pytest.raises(ValueError):
        hvd.allreduce(mx.nd.ones((2,)), process_set=hvd.ProcessSet([0]))
    sparse = mx.nd.ones((2, 2)).tostype("csr")
    with pytest.raises(ValueError, match="sparse"):
        hvd.allreduce(sparse)


# ---- grouped allreduce -------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.float16],
                         ids=ids([np.float32, np.int32, np.float16]))
def test_grouped_allreduce(dtype):
    arrays = [rank_array(RANK, shape_of(d), dtype, 10 + d) for d in DIMS]
    out = hvd.grouped_allreduce(arrays, op=hvd.Sum)
    for d, got in zip(DIMS, out):
        want = np.sum(np.stack(every_rank(shape_of(d), dtype, 10 + d))
                      .astype(np.float64), 0)
        assert close(got, want, dtype)
    same = hvd.grouped_allreduce_(arrays, op=hvd.Sum)
    assert all(a is b for a, b in zip(same, arrays))
    for d, got in zip(DIMS, arrays):
        want = np.sum(np.stack(every_rank(shape_of(d), dtype, 10 + d))
                      .astype(np.float64), 0)
        assert close(got, want, dtype)
    assert hvd.grouped_allreduce([]) == []


def test_grouped_allreduce_average_default():
    arrays = [mx.nd.ones((3,)) * SIZE * (RANK + 1), mx.nd.ones((2, 2))]
    out = hvd.grouped_allreduce(arrays)
    assert close(out[0], np.full(3, TOTAL), np.float32)
    assert close(out[1], np.ones((2, 2)), np.float32)


@multi_rank
def test_grouped_allreduce_mismatch():
    arrays = [mx.nd.ones((3,)), mx.nd.ones((RANK + 1,))]
    with pytest.raises(hvd.HorovodInternalError):
        hvd.grouped_allreduce(arrays, name="grouped_bad")


# ---- allgather ---------------------------------------------------------------

@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=ids(ALL_DTYPES))
def test_allgather(dtype):
    high = 2 if dtype is np.bool_ else 50
    for dim in DIMS:
        # Each rank its own number of rows.
        shape = (RANK + 1,) + (4,) * (dim - 1)
        mine = rank_array(RANK, shape, dtype, dim, 0, high)
        out = hvd.allgather(mine)
        want = np.concatenate([
            rank_values(r, (r + 1,) + (4,) * (dim - 1), dtype, dim, 0, high)
            for r in range(SIZE)])
        assert out.shape == want.shape
        assert close(out, want, dtype)


def test_allgather_output_outlives_everything():
    out = hvd.allgather(mx.nd.ones((2, 3)) * RANK)
    import gc
    gc.collect()
    doubled = (out * 2).asnumpy()
    want = np.concatenate([np.full((2, 3), 2.0 * r) for r in range(SIZE)])
    assert np.array_equal(doubled, want)


def test_allgather_output_is_the_cores_memory_until_freed():
    import gc
    from horovod.common import dlpack
    before = len(dlpack._live)
    out = hvd.allgather(mx.nd.ones((2,)) * RANK)
    assert len(dlpack._live) == before + 1  # holds the core's handle
    del out
    mx.nd.waitall()  # MXNet frees arrays on its engine
    gc.collect()
    assert len(dlpack._live) == before


def test_grouped_allgather():
    a = mx.nd.ones((RANK + 1, 2), dtype=np.int64) * RANK
    b = mx.nd.array([RANK] * 3, dtype=np.int64)
    out = hvd.grouped_allgather([a, b])
    assert close(out[0], np.concatenate(
        [np.full((r + 1, 2), r) for r in range(SIZE)]), np.int64)
    assert close(out[1], np.repeat(np.arange(SIZE), 3), np.int64)
    assert hvd.grouped_allgather([]) == []


@multi_rank
def test_allgather_mismatch():
    a = mx.nd.ones((2, RANK + 2))
    with pytest.raises(hvd.HorovodInternalError):
        hvd.allgather(a, name="allgather_bad")


# ---- broadcast ---------------------------------------------------------------

@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=ids(ALL_DTYPES))
def test_broadcast(dtype):
    high = 2 if dtype is np.bool_ else 50
    for dim in DIMS:
        for root in range(SIZE):
            mine = rank_array(RANK, shape_of(dim), dtype, dim, 0, high)
            before = mine.asnumpy().copy()
            want = rank_values(root, shape_of(dim), dtype, dim, 0, high)
            out = hvd.broadcast(mine, root)
            assert close(out, want, dtype)
            assert np.array_equal(mine.asnumpy(), before)
            same = hvd.broadcast_(mine, root)
            assert same is mine
            assert close(mine, want, dtype)


@multi_rank
def test_broadcast_mismatch():
    with pytest.raises(hvd.HorovodInternalError):
        hvd.broadcast(mx.nd.ones((RANK + 1,)), 0, name="broadcast_bad")
    with pytest.raises(hvd.HorovodInternalError):
        hvd.broadcast(mx.nd.ones((2,)), RANK, name="broadcast_root")


# ---- alltoall ----------------------------------------------------------------

@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=ids(ALL_DTYPES))
def test_alltoall_equal_splits(dtype):
    high = 2 if dtype is np.bool_ else 100
    values = every_rank((SIZE * 2, 3), dtype, 5, low=0, high=high)
    out = hvd.alltoall(mx.nd.array(values[RANK], dtype=dtype))
    want = np.concatenate([v[RANK * 2:RANK * 2 + 2] for v in values])
    assert close(out, want, dtype)


@pytest.mark.parametrize("as_array", [False, True], ids=["list", "ndarray"])
def test_alltoall_splits(as_array):
    # rank r sends r + 1 + d rows to rank d
    splits = [RANK + 1 + d for d in range(SIZE)]
    rows = sum(splits)
    mine = mx.nd.array(np.arange(rows * 2).reshape(rows, 2) + 1000 * RANK)
    arg = mx.nd.array(splits, dtype=np.int32) if as_array else splits
    out, received = hvd.alltoall(mine, splits=arg)
    assert received.dtype == np.int32
    assert list(received.asnumpy()) == [r + 1 + RANK for r in range(SIZE)]
    parts = []
    for r in range(SIZE):
        theirs = [r + 1 + d for d in range(SIZE)]
        start = sum(theirs[:RANK])
        parts.append(np.arange(sum(theirs) * 2).reshape(-1, 2)
                     [start:start + theirs[RANK]] + 1000 * r)
    assert np.array_equal(out.asnumpy(), np.concatenate(parts))


def test_alltoall_errors():
    with pytest.raises(ValueError):
        hvd.alltoall(mx.nd.ones((SIZE,)), splits=[[1] * SIZE])
    with pytest.raises(ValueError):
        hvd.alltoall(mx.nd.ones((SIZE,)), splits=[0.5] * SIZE)


# ---- reducescatter -----------------------------------------------------------

@pytest.mark.parametrize("dtype", NUMERIC_DTYPES, ids=ids(NUMERIC_DTYPES))
def test_reducescatter_sum(dtype):
    rows = SIZE * 2 + 1  # uneven: the first ranks get one more row
    values = every_rank((rows, 3), dtype, 9)
    out = hvd.reducescatter(mx.nd.array(values[RANK], dtype=dtype),
                            op=hvd.Sum)
    total = np.sum(np.stack(values).astype(np.float64), 0)
    counts = [rows // SIZE + (1 if r < rows % SIZE else 0)
              for r in range(SIZE)]
    start = sum(counts[:RANK])
    assert close(out, total[start:start + counts[RANK]], dtype)


def test_reducescatter_average_is_the_default():
    a = mx.nd.ones((SIZE * 2, 2)) * SIZE * (RANK + 1)
    out = hvd.reducescatter(a)
    assert close(out, np.full((2, 2), TOTAL), np.float32)
    scaled = hvd.reducescatter(a, op=hvd.Sum, prescale_factor=0.5,
                               postscale_factor=2.0 / SIZE)
    assert close(scaled, np.full((2, 2), TOTAL), np.float32)


def test_grouped_reducescatter():
    a = mx.nd.ones((SIZE, 2)) * (RANK + 1)
    b = mx.nd.ones((SIZE * 3,))
    out = hvd.grouped_reducescatter([a, b], op=hvd.Sum)
    assert close(out[0], np.full((1, 2), TOTAL), np.float32)
    assert close(out[1], np.full(3, SIZE), np.float32)
    assert hvd.grouped_reducescatter([]) == []


@multi_rank
def test_reducescatter_mismatch():
    with pytest.raises(hvd.HorovodInternalError):
        hvd.reducescatter(mx.nd.ones((SIZE, RANK + 1)), name="rs_bad")
