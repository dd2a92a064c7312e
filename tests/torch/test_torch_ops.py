"""horovod.torch's collectives in the spirit of Horovod's
test/parallel/test_torch.py: every op, every CPU dtype, error cases,
autograd and async handles. Run under horovodrun -np 2 and -np 3."""

import itertools
import os

import pytest
import torch

import horovod.torch as hvd
from horovod.common import basics as hvd_basics
from conftest import (ALL_DTYPES, FLOAT_DTYPES, NUMERIC_DTYPES, every_rank,
                      rank_tensor)

hvd.init()
RANK, SIZE = hvd.rank(), hvd.size()
DIMS = [1, 2, 3]


def shape_of(dim, n=5):
    return [n] * dim


def multi_rank(fn):
    return pytest.mark.skipif(SIZE < 2, reason="needs 2 or more ranks")(fn)


def close(a, b, dtype):
    if dtype in (torch.float16, torch.bfloat16):
        return torch.allclose(a.double(), b.double(), rtol=1e-2, atol=1e-2)
    if dtype.is_floating_point:
        return torch.allclose(a.double(), b.double(), rtol=1e-6, atol=1e-6)
    return torch.equal(a, b)


# ---- basics ------------------------------------------------------------------

def test_layout():
    assert hvd.is_initialized()
    assert 0 <= RANK < SIZE
    assert 0 <= hvd.local_rank() < hvd.local_size()
    assert 0 <= hvd.cross_rank() < hvd.cross_size()
    assert hvd.local_size() * hvd.cross_size() == SIZE  # one host here
    assert hvd.is_homogeneous() is True


def test_build_queries():
    # Horovod's types: nccl_built() is NCCL's version code (0 when not
    # built), the others are bools.
    for q in (hvd.mpi_built, hvd.mpi_enabled, hvd.gloo_built,
              hvd.gloo_enabled, hvd.cuda_built, hvd.rocm_built,
              hvd.ddl_built, hvd.ccl_built):
        assert isinstance(q(), bool), q.__name__
    nccl = hvd.nccl_built()
    assert type(nccl) is int and nccl >= 0
    assert hvd.cuda_built() == (nccl > 0)
    nccl_plugin = os.path.exists(
        hvd_basics.plugin_path("transport", "nccl"))
    if not nccl_plugin:
        assert nccl == 0
    elif nccl:
        assert nccl >= 2000  # NCCL_VERSION_CODE of a 2.x release
    assert not hvd.rocm_built() and not hvd.ddl_built()
    # Enabled implies built; this job runs over shm/tcp.
    assert not hvd.mpi_enabled() and not hvd.gloo_enabled()
    # As Horovod: asking about MPI threads without MPI is an error.
    with pytest.raises(ValueError, match="MPI is not enabled"):
        hvd.mpi_threads_supported()


def test_ops_are_distinct():
    ops = [hvd.Average, hvd.Sum, hvd.Adasum, hvd.Min, hvd.Max, hvd.Product]
    assert len(set(ops)) == 6
    assert issubclass(hvd.HorovodInternalError, RuntimeError)


# ---- allreduce ---------------------------------------------------------------

REDUCTIONS = {
    hvd.Sum: lambda ts: torch.stack([t.double() for t in ts]).sum(0),
    hvd.Min: lambda ts: torch.stack([t.double() for t in ts]).min(0).values,
    hvd.Max: lambda ts: torch.stack([t.double() for t in ts]).max(0).values,
    hvd.Product: lambda ts: torch.stack([t.double() for t in ts]).prod(0),
}


@pytest.mark.parametrize("dtype", NUMERIC_DTYPES)
@pytest.mark.parametrize("op", list(REDUCTIONS), ids=["sum", "min", "max",
                                                      "product"])
def test_allreduce_ops(dtype, op):
    for dim in DIMS:
        seed = 100 * dim + op
        high = 3 if op == hvd.Product else 4
        low = 1 if op == hvd.Product else 0
        tensor = rank_tensor(RANK, shape_of(dim), dtype, seed, low, high)
        before = tensor.clone()
        result = hvd.allreduce(tensor, op=op)
        expected = REDUCTIONS[op](every_rank(shape_of(dim), dtype, seed, low=low,
                                             high=high)).to(dtype)
        assert result.dtype == dtype and result.shape == tensor.shape
        assert close(result, expected, dtype)
        assert torch.equal(tensor, before), "allreduce modified its input"


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + [torch.int32, torch.int64])
def test_allreduce_average(dtype):
    for dim in DIMS:
        # Multiples of SIZE average to integers exactly.
        tensors = [t * SIZE for t in every_rank(shape_of(dim), dtype, dim)]
        result = hvd.allreduce(tensors[RANK])  # Average is the default
        expected = (torch.stack([t.double() for t in tensors]).sum(0) /
                    SIZE).to(dtype)
        assert close(result, expected, dtype)
        assert close(hvd.allreduce(tensors[RANK], op=hvd.Average), expected,
                     dtype)


def test_allreduce_average_deprecated_argument():
    t = torch.ones(4) * (RANK + 1)
    with pytest.warns(DeprecationWarning):
        summed = hvd.allreduce(t, average=False)
    assert torch.equal(summed, torch.full((4,), SIZE * (SIZE + 1) / 2))
    with pytest.raises(ValueError):
        hvd.allreduce(t, average=True, op=hvd.Sum)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64,
                                   torch.float16, torch.int32])
def test_allreduce_prescale_postscale(dtype):
    t = torch.ones(3, 4, dtype=dtype) * (RANK + 1)
    total = SIZE * (SIZE + 1) / 2
    out = hvd.allreduce(t, op=hvd.Sum, prescale_factor=2.0,
                        postscale_factor=0.5 if dtype.is_floating_point
                        else 1.0)
    expected = total * (1.0 if dtype.is_floating_point else 2.0)
    assert close(out, torch.full((3, 4), expected, dtype=dtype), dtype)


def test_allreduce_bool():
    t = rank_tensor(RANK, [17], torch.bool, 7, 0, 2)
    everyone = every_rank([17], torch.bool, 7, low=0, high=2)
    assert torch.equal(hvd.allreduce(t, op=hvd.Max),
                       torch.stack(everyone).any(0))
    assert torch.equal(hvd.allreduce(t, op=hvd.Min),
                       torch.stack(everyone).all(0))
    with pytest.raises(ValueError):
        hvd.allreduce(t)  # bool cannot be averaged


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.uint8])
def test_allreduce_in_place(dtype):
    t = torch.ones(2, 3, dtype=dtype) * (RANK + 1)
    out = hvd.allreduce_(t, op=hvd.Sum)
    total = SIZE * (SIZE + 1) // 2
    assert out is t
    assert torch.equal(t, torch.full((2, 3), total, dtype=dtype))
    h = hvd.allreduce_async_(t, op=hvd.Max, name="in_place_async")
    assert hvd.synchronize(h) is t
    assert torch.equal(t, torch.full((2, 3), total, dtype=dtype))


def test_allreduce_non_contiguous():
    base = torch.arange(24, dtype=torch.float32).view(4, 6) * (RANK + 1)
    view = base[:, ::2]
    assert not view.is_contiguous()
    expected = view * (SIZE * (SIZE + 1) / 2) / (RANK + 1)
    out = hvd.allreduce(view, op=hvd.Sum)
    assert torch.allclose(out, expected)
    hvd.allreduce_(view, op=hvd.Sum)
    assert torch.allclose(base[:, ::2], expected)
    assert torch.allclose(base[:, 1::2],
                          torch.arange(24.).view(4, 6)[:, 1::2] * (RANK + 1))


def test_allreduce_async_many():
    handles = [hvd.allreduce_async(torch.full((10,), float(i)), op=hvd.Sum,
                                   name=f"many.{i}") for i in range(20)]
    for i, h in enumerate(handles):
        out = hvd.synchronize(h)
        assert torch.equal(out, torch.full((10,), float(i * SIZE)))
    # unnamed ones too, waited for in reverse order
    handles = [hvd.allreduce_async(torch.ones(3) * i, op=hvd.Sum)
               for i in range(5)]
    for i, h in reversed(list(enumerate(handles))):
        assert torch.equal(hvd.synchronize(h), torch.ones(3) * i * SIZE)


def test_poll():
    h = hvd.allreduce_async(torch.ones(1000), name="poll")
    while not hvd.poll(h):
        pass
    assert hvd.poll(h)
    assert torch.equal(hvd.synchronize(h), torch.ones(1000))
    assert hvd.synchronize(h) is None  # already synchronized
    with pytest.raises(ValueError):
        hvd.poll(h)


def test_allreduce_scalar_and_empty():
    assert hvd.allreduce(torch.tensor(2.0), op=hvd.Sum).item() == 2.0 * SIZE
    empty = hvd.allreduce(torch.zeros(0, 3), op=hvd.Sum)
    assert empty.shape == (0, 3)


def test_allreduce_compression_fp16():
    t = torch.ones(5, dtype=torch.float64) * (RANK + 1)
    out = hvd.allreduce(t, op=hvd.Sum, compression=hvd.Compression.fp16)
    assert out.dtype == torch.float64
    assert torch.equal(out, torch.full((5,), SIZE * (SIZE + 1) / 2,
                                       dtype=torch.float64))


@multi_rank
def test_allreduce_shape_mismatch():
    t = torch.ones([RANK + 1] * 2)
    with pytest.raises(RuntimeError, match="shape"):
        hvd.allreduce(t)


@multi_rank
def test_allreduce_dtype_mismatch():
    t = torch.ones(3, dtype=torch.int32 if RANK % 2 == 0 else torch.float32)
    with pytest.raises(RuntimeError):
        hvd.allreduce(t, op=hvd.Sum)


@multi_rank
def test_allreduce_op_mismatch():
    with pytest.raises(RuntimeError):
        hvd.allreduce(torch.ones(3), op=hvd.Sum if RANK == 0 else hvd.Max)


@multi_rank
def test_default_names():
    # Unnamed ops are named as Horovod names them; a mismatch shows it.
    with pytest.raises(RuntimeError, match=r"allreduce\.noname\.\d+"):
        hvd.allreduce(torch.ones(RANK + 1))
    with pytest.raises(RuntimeError, match=r"allreduce\.myname"):
        hvd.allreduce(torch.ones(RANK + 1), name="myname")
    with pytest.raises(RuntimeError, match=r"allgather\.noname\.\d+"):
        hvd.allgather(torch.ones(2, RANK + 1))
    with pytest.raises(RuntimeError, match=r"broadcast\.b"):
        hvd.broadcast(torch.ones(RANK + 1), 0, name="b")


@multi_rank
def test_duplicate_name():
    t = torch.ones(3)
    h = hvd.allreduce_async(t, name="duplicate_name")
    with pytest.raises(ValueError):
        for _ in range(10):
            hvd.allreduce_async(t, name="duplicate_name")
    hvd.synchronize(h)
    hvd.barrier()


def test_argument_errors():
    with pytest.raises(ValueError):
        hvd.allreduce(torch.ones(2, dtype=torch.complex64))
    with pytest.raises(ValueError):
        hvd.allreduce(torch.ones(2), op=42)
    with pytest.raises(ValueError):
        hvd.allgather(torch.tensor(1.0))
    with pytest.raises(ValueError):
        hvd.alltoall(torch.ones(SIZE * 2), splits=[1] * SIZE)
    with pytest.raises(ValueError):
        hvd.broadcast(torch.ones(2), SIZE)  # not a rank


# ---- grouped allreduce -------------------------------------------------------

@pytest.mark.parametrize("dtype", [torch.float32, torch.int32, torch.float16])
def test_grouped_allreduce(dtype):
    tensors = [rank_tensor(RANK, shape_of(d), dtype, 40 + d) for d in DIMS]
    out = hvd.grouped_allreduce(tensors, op=hvd.Sum)
    for d, o in zip(DIMS, out):
        expected = REDUCTIONS[hvd.Sum](
            every_rank(shape_of(d), dtype, 40 + d)).to(dtype)
        assert close(o, expected, dtype)
    h = hvd.grouped_allreduce_async(tensors, op=hvd.Sum, name="grouped")
    assert all(close(a, b, dtype) for a, b in zip(hvd.synchronize(h), out))
    copies = [t.clone() for t in tensors]
    result = hvd.grouped_allreduce_(copies, op=hvd.Sum)
    assert all(r is c for r, c in zip(result, copies))
    assert all(close(a, b, dtype) for a, b in zip(copies, out))
    copies = [t.clone() for t in tensors]
    hvd.synchronize(hvd.grouped_allreduce_async_(copies, op=hvd.Sum))
    assert all(close(a, b, dtype) for a, b in zip(copies, out))


@multi_rank
def test_grouped_allreduce_mismatch():
    with pytest.raises(RuntimeError):
        hvd.grouped_allreduce([torch.ones(2), torch.ones(RANK + 1)])


# ---- allgather ---------------------------------------------------------------

@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_allgather(dtype):
    for dim in DIMS:
        rows = [r + 1 for r in range(SIZE)]  # first dimensions differ
        parts = [rank_tensor(r, [rows[r]] + [4] * (dim - 1), dtype, dim,
                             0, 2 if dtype == torch.bool else 50)
                 for r in range(SIZE)]
        out = hvd.allgather(parts[RANK])
        assert out.dtype == dtype
        assert torch.equal(out, torch.cat(parts))
        h = hvd.allgather_async(parts[RANK], name=f"gather.{dtype}.{dim}")
        assert torch.equal(hvd.synchronize(h), torch.cat(parts))


def test_allgather_output_outlives_handle():
    outs = [hvd.allgather(torch.full((2,), float(i))) for i in range(50)]
    for i, o in enumerate(outs):
        assert torch.equal(o, torch.full((2 * SIZE,), float(i)))
    o = outs[3] * 1
    del outs
    assert torch.equal(o, torch.full((2 * SIZE,), 3.0))


def test_allgather_output_is_the_cores_memory():
    # The output is the core's allocation handed over through DLPack; the
    # core's handle goes when torch frees the tensor.
    from horovod.common import dlpack
    before = len(dlpack._live)
    out = hvd.allgather(torch.ones(4, 2))
    view = out[1:]
    del out
    assert len(dlpack._live) == before + 1  # the view keeps it alive
    assert torch.equal(view, torch.ones(4 * SIZE - 1, 2))
    del view
    assert len(dlpack._live) == before
    a2a, _ = hvd.alltoall(torch.ones(SIZE, 3), splits=[1] * SIZE)
    assert len(dlpack._live) == before + 1
    del a2a
    assert len(dlpack._live) == before


def test_allgather_empty_rows():
    t = torch.ones(RANK % 2, 3)  # some ranks send nothing
    out = hvd.allgather(t)
    assert out.shape == (sum(r % 2 for r in range(SIZE)), 3)


def test_grouped_allgather():
    tensors = [torch.full((RANK + 1, 2), RANK, dtype=torch.int64),
               torch.full((1,), RANK, dtype=torch.int64)]
    out = hvd.grouped_allgather(tensors)
    assert torch.equal(out[0], torch.cat([torch.full((r + 1, 2), r)
                                          for r in range(SIZE)]))
    assert torch.equal(out[1], torch.arange(SIZE))
    h = hvd.grouped_allgather_async(tensors, name="grouped_gather")
    assert torch.equal(hvd.synchronize(h)[1], torch.arange(SIZE))
    with pytest.raises(ValueError, match="dtype"):  # one dtype per group
        hvd.grouped_allgather([tensors[0], tensors[1].float()])


@multi_rank
def test_allgather_errors():
    with pytest.raises(RuntimeError):
        hvd.allgather(torch.ones(2, RANK + 1))  # other dims differ
    with pytest.raises(RuntimeError):
        hvd.allgather(torch.ones(2, dtype=torch.int32 if RANK == 0
                                 else torch.float32))


# ---- broadcast ---------------------------------------------------------------

@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_broadcast(dtype):
    for dim, root in itertools.product(DIMS, range(SIZE)):
        high = 2 if dtype == torch.bool else 50
        tensors = every_rank(shape_of(dim), dtype, dim, high=high)
        mine = tensors[RANK].clone()
        out = hvd.broadcast(mine, root)
        assert torch.equal(out, tensors[root])
        assert torch.equal(mine, tensors[RANK]), "broadcast modified input"
        out_ = hvd.broadcast_(mine, root)
        assert out_ is mine and torch.equal(mine, tensors[root])
        h = hvd.broadcast_async(tensors[RANK], root, name=f"bc.{dim}.{root}")
        assert torch.equal(hvd.synchronize(h), tensors[root])
        t = tensors[RANK].clone()
        hvd.synchronize(hvd.broadcast_async_(t, root))
        assert torch.equal(t, tensors[root])


@multi_rank
def test_broadcast_errors():
    with pytest.raises(RuntimeError):
        hvd.broadcast(torch.ones(3), RANK)  # roots differ
    with pytest.raises(RuntimeError):
        hvd.broadcast(torch.ones(RANK + 1), 0)
    with pytest.raises(RuntimeError):
        hvd.broadcast(torch.ones(2, dtype=torch.int32 if RANK == 0
                                 else torch.float32), 0)


@multi_rank
def test_broadcast_duplicate_name():
    t = torch.ones(3)
    h = hvd.broadcast_async(t, root_rank=0, name="duplicate_bcast")
    with pytest.raises(ValueError):
        for _ in range(10):
            hvd.broadcast_async(t, root_rank=0, name="duplicate_bcast")
    hvd.synchronize(h)
    hvd.barrier()


# ---- alltoall ----------------------------------------------------------------

@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_alltoall_equal_splits(dtype):
    rows = 2 * SIZE
    high = 2 if dtype == torch.bool else 100
    tensors = every_rank([rows, 3], dtype, 11, high=high)
    out = hvd.alltoall(tensors[RANK])
    expected = torch.cat([t[2 * RANK:2 * RANK + 2] for t in tensors])
    assert out.dtype == dtype and torch.equal(out, expected)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int8, torch.bool])
def test_alltoall_splits(dtype):
    # rank r sends (r + d + 1) rows to rank d
    splits = [RANK + d + 1 for d in range(SIZE)]
    high = 2 if dtype == torch.bool else 100
    tensors = [rank_tensor(r, [sum(r + d + 1 for d in range(SIZE)), 2],
                           dtype, 12, 0, high) for r in range(SIZE)]
    out, received = hvd.alltoall(tensors[RANK], splits=splits)
    pieces = []
    for r in range(SIZE):
        start = sum(r + d + 1 for d in range(RANK))
        pieces.append(tensors[r][start:start + r + RANK + 1])
    assert torch.equal(out, torch.cat(pieces))
    assert received.tolist() == [r + RANK + 1 for r in range(SIZE)]
    out2, _ = hvd.alltoall(tensors[RANK],
                           splits=torch.tensor(splits, dtype=torch.int32))
    assert torch.equal(out2, out)
    h = hvd.alltoall_async(tensors[RANK], splits, name="a2a")
    out3, received3 = hvd.synchronize(h)
    assert torch.equal(out3, out) and torch.equal(received3, received)


def test_alltoall_sends_nothing_to_some():
    splits = [0] * SIZE
    splits[0] = 3
    out, received = hvd.alltoall(torch.ones(3, 2) * RANK, splits=splits)
    assert received.tolist() == ([3] * SIZE if RANK == 0 else [0] * SIZE)
    assert out.shape == ((3 * SIZE, 2) if RANK == 0 else (0, 2))


@multi_rank
def test_alltoall_errors():
    with pytest.raises(RuntimeError):
        hvd.alltoall(torch.ones(SIZE, RANK + 1))
    with pytest.raises(RuntimeError):
        hvd.alltoall(torch.ones(SIZE, dtype=torch.int32 if RANK == 0
                                else torch.float32))


# ---- reducescatter -----------------------------------------------------------

def my_rows(rows):
    base, extra = divmod(rows, SIZE)
    start = RANK * base + min(RANK, extra)
    return start, base + (1 if RANK < extra else 0)


@pytest.mark.parametrize("dtype", NUMERIC_DTYPES)
def test_reducescatter_sum(dtype):
    for rows in (SIZE * 2, SIZE * 2 + 1, 1):
        tensors = every_rank([rows, 3], dtype, rows)
        out = hvd.reducescatter(tensors[RANK], op=hvd.Sum)
        start, count = my_rows(rows)
        expected = REDUCTIONS[hvd.Sum](tensors).to(dtype)[start:start + count]
        assert out.shape == expected.shape
        assert close(out, expected, dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_reducescatter_average(dtype):
    tensors = [t * SIZE for t in every_rank([SIZE * 3, 2], dtype, 5)]
    out = hvd.reducescatter(tensors[RANK])  # Average is the default
    start, count = my_rows(SIZE * 3)
    expected = (torch.stack(tensors).sum(0) / SIZE)[start:start + count]
    assert close(out, expected, dtype)
    h = hvd.reducescatter_async(tensors[RANK], name="rs")
    assert close(hvd.synchronize(h), expected, dtype)
    scaled = hvd.reducescatter(tensors[RANK], op=hvd.Sum,
                               prescale_factor=0.5, postscale_factor=4.0)
    assert close(scaled, expected * SIZE * 2, dtype)


def test_grouped_reducescatter():
    tensors = [torch.ones(SIZE * 2, 2) * (RANK + 1),
               torch.ones(SIZE + 1) * (RANK + 1)]
    out = hvd.grouped_reducescatter(tensors, op=hvd.Sum)
    total = SIZE * (SIZE + 1) / 2
    assert torch.equal(out[0], torch.full((2, 2), total))
    assert torch.equal(out[1], torch.full((my_rows(SIZE + 1)[1],), total))
    h = hvd.grouped_reducescatter_async(tensors, op=hvd.Sum, name="grs")
    assert torch.equal(hvd.synchronize(h)[0], out[0])


@multi_rank
def test_reducescatter_errors():
    with pytest.raises(RuntimeError):
        hvd.reducescatter(torch.ones(SIZE, RANK + 1))
    with pytest.raises(ValueError):
        hvd.reducescatter(torch.tensor(1.0))


# ---- autograd ----------------------------------------------------------------
# Gradients as Horovod 0.28 defines them (horovod/torch/mpi_ops.py). Rank r
# feeds the output gradient (r + 1) * g, so sums and averages over ranks
# differ and a wrong factor of the set's size shows.

def mean_weight():
    """The average over ranks of the weights r + 1."""
    return (SIZE + 1) / 2


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_allreduce_grad(dtype):
    # The gradient is the allreduce of the output gradient with the same
    # op and scale factors.
    for dim in DIMS:
        t = torch.ones(shape_of(dim), dtype=dtype, requires_grad=True)
        hvd.allreduce(t, op=hvd.Sum).backward(torch.ones_like(t) * (RANK + 1))
        assert torch.equal(t.grad, torch.full_like(t, SIZE * mean_weight()))
        t = torch.ones(shape_of(dim), dtype=dtype, requires_grad=True)
        hvd.allreduce(t).backward(torch.ones_like(t) * (RANK + 1))  # Average
        assert torch.allclose(t.grad, torch.full_like(t, mean_weight()))
        t = torch.ones(shape_of(dim), dtype=dtype, requires_grad=True)
        hvd.allreduce(t, op=hvd.Sum, prescale_factor=3.0,
                      postscale_factor=0.5).backward(torch.ones_like(t))
        assert torch.equal(t.grad, torch.full_like(t, 1.5 * SIZE))


def test_grouped_allreduce_grad():
    ts = [torch.ones(3, requires_grad=True), torch.ones(2, 2,
                                                        requires_grad=True)]
    outs = hvd.grouped_allreduce(ts, op=hvd.Sum)
    (sum(o.sum() for o in outs) * (RANK + 1)).backward()
    for t in ts:
        assert torch.equal(t.grad, torch.full_like(t, SIZE * mean_weight()))
    outs = hvd.grouped_allreduce(ts, op=hvd.Average)
    (sum(o.sum() for o in outs) * (RANK + 1)).backward()
    for t in ts:
        assert torch.allclose(
            t.grad, torch.full_like(t, SIZE * mean_weight() + mean_weight()))


def test_allgather_grad():
    # The output gradient averaged over the ranks, this rank's rows of it.
    for dim in DIMS:
        rows = [r + 1 for r in range(SIZE)]
        t = torch.ones([rows[RANK]] + [3] * (dim - 1), requires_grad=True)
        gathered = hvd.allgather(t)
        assert list(gathered.shape) == [sum(rows)] + [3] * (dim - 1)
        position = torch.arange(float(sum(rows))).view(
            [-1] + [1] * (dim - 1)).expand_as(gathered)
        gathered.backward(position * (RANK + 1))
        start = sum(rows[:RANK])
        mine = torch.arange(float(start), float(start + rows[RANK])).view(
            [-1] + [1] * (dim - 1)).expand_as(t)
        assert torch.allclose(t.grad, mine * mean_weight())


def test_grouped_allgather_grad():
    ts = [torch.ones(RANK + 1, 2, requires_grad=True),
          torch.ones(1, requires_grad=True)]
    outs = hvd.grouped_allgather(ts)
    assert isinstance(outs, tuple)
    ((outs[0].sum() * 2 + outs[1].sum()) * (RANK + 1)).backward()
    assert torch.allclose(ts[0].grad,
                          torch.full_like(ts[0], 2.0 * mean_weight()))
    assert torch.allclose(ts[1].grad, torch.full_like(ts[1], mean_weight()))


def test_broadcast_grad():
    # The root gets the output gradient averaged over the ranks, the others
    # zero (on 2 ranks with ones everywhere: 1.0 on the root, not 2.0).
    for dim, root in itertools.product(DIMS, range(SIZE)):
        t = (torch.ones(shape_of(dim)) * RANK).requires_grad_()
        hvd.broadcast(t, root).backward(torch.ones(shape_of(dim)))
        assert torch.equal(t.grad, torch.full_like(t, float(RANK == root)))
        t = (torch.ones(shape_of(dim)) * RANK).requires_grad_()
        hvd.broadcast(t, root).backward(torch.ones(shape_of(dim)) * (RANK + 1))
        c = mean_weight() if RANK == root else 0.0
        assert torch.allclose(t.grad, torch.full_like(t, c))


def test_alltoall_grad():
    splits = [RANK + d + 1 for d in range(SIZE)]
    t = torch.ones(sum(splits), 2, requires_grad=True)
    out, received = hvd.alltoall(t, splits=splits)
    out.backward(torch.ones_like(out) * (RANK + 1))
    # Rows sent to rank d come back with d's gradient (d + 1).
    expected = torch.cat([torch.full((splits[d], 2), float(d + 1))
                          for d in range(SIZE)])
    assert torch.equal(t.grad, expected)
    t2 = torch.ones(SIZE * 2, requires_grad=True)
    hvd.alltoall(t2).sum().backward()
    assert torch.equal(t2.grad, torch.ones_like(t2))


def my_rows_of(rank, rows):
    base, extra = divmod(rows, SIZE)
    return base + (1 if rank < extra else 0)


def scattered_grad(rows, weight_of_rank):
    """The full-size gradient whose rows of rank r are weight_of_rank(r)."""
    return torch.cat([torch.full((my_rows_of(r, rows), 3), weight_of_rank(r))
                      for r in range(SIZE)])


def test_reducescatter_grad():
    # The allgather of the output gradient, times the set's size for Sum,
    # times the prescale and postscale factors.
    rows = SIZE * 2 + 1
    cases = [(hvd.Sum, 1.0, 1.0, SIZE), (hvd.Average, 1.0, 1.0, 1),
             (hvd.Sum, 2.0, 3.0, 6 * SIZE), (hvd.Average, 0.5, 1.0, 0.5),
             (hvd.Max, 1.0, 1.0, 1), (hvd.Min, 1.0, 4.0, 4)]
    for op, pre, post, factor in cases:
        t = torch.ones(rows, 3, requires_grad=True)
        out = hvd.reducescatter(t, op=op, prescale_factor=pre,
                                postscale_factor=post)
        out.backward(torch.ones_like(out) * (RANK + 1))
        assert torch.equal(t.grad, scattered_grad(
            rows, lambda r: float((r + 1) * factor))), (op, pre, post)


def test_grouped_reducescatter_grad():
    rows = SIZE + 1
    for op, factor in ((hvd.Sum, SIZE), (hvd.Average, 1)):
        ts = [torch.ones(rows, 3, requires_grad=True),
              torch.ones(rows, 3, requires_grad=True)]
        out = hvd.grouped_reducescatter(ts, op=op)
        ((out[0].sum() + 2 * out[1].sum()) * (RANK + 1)).backward()
        for t, weight in zip(ts, (1, 2)):
            assert torch.equal(t.grad, scattered_grad(
                rows, lambda r: float((r + 1) * factor * weight))), op


# ---- sparse, join, barrier ---------------------------------------------------

def test_sparse_allreduce():
    i = torch.tensor([[RANK % 3, 2]])
    v = torch.tensor([1.0, float(RANK)])
    sparse = torch.sparse_coo_tensor(i, v, (4,))
    handle = hvd.sparse_allreduce_async(sparse, name="sparse", op=hvd.Sum)
    out = hvd.synchronize(handle)
    assert out.is_sparse
    dense = torch.zeros(4)
    for r in range(SIZE):
        dense[r % 3] += 1.0
        dense[2] += r
    assert torch.allclose(out.to_dense(), dense)
    avg = hvd.synchronize(hvd.sparse_allreduce_async(sparse, name="sparse2",
                                                     op=hvd.Average))
    assert torch.allclose(avg.to_dense(), dense / SIZE)


def test_join():
    # Rank r runs r allreduces before joining: joined ranks add zeros.
    for step in range(RANK):
        out = hvd.allreduce(torch.ones(4), op=hvd.Sum, name=f"join.{step}")
        assert torch.equal(out, torch.full((4,), float(SIZE - 1 - step)))
    assert hvd.join() == SIZE - 1
    hvd.barrier()


def test_barrier():
    for _ in range(3):
        hvd.barrier()
