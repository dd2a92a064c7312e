"""horovod.torch's device route without a GPU. With the fake device on,
host tensors take the route CUDA tensors take (_device_path): the op runs
on a stream of the core's (here the fake device's: host memory with stream
and event semantics), allgather's and alltoall's outputs are allocated by
the binding with the shapes learnt from the ranks first and handed to the
core, which writes into them on its device path. So the decisions, the
output allocation and the shapes run here as they run on a GPU. Under
horovodrun -np 2 and -np 3."""

import pytest
import torch

import horovod.torch as hvd
from horovod.common.exceptions import HorovodInternalError
from horovod.torch import _device_path
from conftest import FLOAT_DTYPES, NUMERIC_DTYPES, rank_tensor

hvd.init()
RANK, SIZE = hvd.rank(), hvd.size()
DEVICE = _device_path.DEVICE


@pytest.fixture(autouse=True)
def fake_device():
    _device_path.use_fake_device(True)
    yield
    _device_path.use_fake_device(False)


@pytest.fixture
def allocated(monkeypatch):
    """The outputs the binding allocated for allgather and alltoall, in
    order."""
    seen = []

    def record(fn):
        def wrapper(*args):
            out = fn(*args)
            seen.extend(out if isinstance(out, list) else [out])
            return out
        return wrapper

    monkeypatch.setattr(_device_path, "allgather_outputs",
                        record(_device_path.allgather_outputs))
    monkeypatch.setattr(_device_path, "alltoall_output",
                        record(_device_path.alltoall_output))
    return seen


def same_storage(a, b):
    return a.data_ptr() == b.data_ptr() and a.shape == b.shape


# ---- decisions -------------------------------------------------------------

def test_routes():
    t = torch.ones(3)
    assert _device_path.route(t) == DEVICE
    assert _device_path.stream_for([t]) != 0
    _device_path.use_fake_device(False)
    assert _device_path.route(t) == _device_path.HOST
    assert _device_path.stream_for([t]) == 0
    # A device the core does not take (here torch's meta device) is staged.
    assert _device_path.route(torch.empty(3, device="meta")) == \
        _device_path.STAGE


def test_shapes():
    rows = torch.tensor([[2, 0], [1, 4], [3, 1]])
    a, b = _device_path.allgather_outputs(
        [torch.ones(2, 5, dtype=torch.float16),
         torch.ones(0, dtype=torch.int8)],
        rows)
    assert a.shape == (6, 5) and a.dtype == torch.float16
    assert b.shape == (5,) and b.dtype == torch.int8
    with pytest.raises(ValueError, match="rows of shape"):
        _device_path.allgather_outputs([torch.ones(2)], rows)
    out = _device_path.alltoall_output(torch.ones(4, 2, 3), [1, 0, 5])
    assert out.shape == (6, 2, 3)
    assert _device_path.equal_splits(6, 3) == [2, 2, 2]
    with pytest.raises(ValueError, match="divisible"):
        _device_path.equal_splits(7, 3)


# ---- every collective on the device route -----------------------------------

@pytest.mark.parametrize("dtype", NUMERIC_DTYPES)
def test_allgather_uneven_rows(dtype, allocated):
    before = _device_path.taken[DEVICE]
    t = torch.full((RANK + 1, 3), RANK, dtype=dtype)
    out = hvd.allgather(t, name=f"dp.allgather.{dtype}")
    assert _device_path.taken[DEVICE] > before
    assert len(allocated) == 1 and same_storage(out, allocated[0])
    want = torch.cat([torch.full((r + 1, 3), r, dtype=dtype)
                      for r in range(SIZE)])
    assert torch.equal(out, want)


def test_allgather_under_one_name_again(allocated):
    # The op's descriptor is cached under its name; the outputs are the
    # call's own every time.
    for step in range(3):
        t = torch.full((RANK + step + 1,), float(step))
        out = hvd.allgather(t, name="dp.again")
        assert same_storage(out, allocated[-1])
        assert out.tolist() == [float(step)] * sum(
            r + step + 1 for r in range(SIZE))
    assert len(allocated) == 3


def test_grouped_allgather(allocated):
    tensors = [torch.full((RANK + 2,), float(RANK)),
               torch.full((SIZE - RANK, 2), float(RANK))]
    outs = hvd.grouped_allgather(tensors)
    assert len(allocated) == 2
    assert all(same_storage(o, a) for o, a in zip(outs, allocated))
    assert outs[0].tolist() == [float(r) for r in range(SIZE)
                                for _ in range(r + 2)]
    assert outs[1][:, 0].tolist() == [r for r in range(SIZE)
                                      for _ in range(SIZE - r)]


def test_allgather_grad():
    t = torch.ones(RANK + 1, 2, requires_grad=True)
    hvd.allgather(t).sum().backward()
    assert t.grad.shape == t.shape
    assert torch.equal(t.grad, torch.ones_like(t))


def test_alltoall_splits(allocated):
    splits = torch.tensor([r + 1 for r in range(SIZE)], dtype=torch.int64)
    t = torch.arange(int(splits.sum()), dtype=torch.float32) + 100 * RANK
    out, received = hvd.alltoall(t, splits, name="dp.alltoall")
    assert len(allocated) == 1 and same_storage(out, allocated[0])
    assert received.dtype == torch.int64
    assert received.tolist() == [RANK + 1] * SIZE
    start = sum(range(1, RANK + 1))
    want = torch.cat([torch.arange(start, start + RANK + 1,
                                   dtype=torch.float32) + 100 * r
                      for r in range(SIZE)])
    assert torch.equal(out, want)


def test_alltoall_equal(allocated):
    t = torch.arange(SIZE * 2).view(SIZE, 2) + 10 * RANK
    out = hvd.alltoall(t)
    assert same_storage(out, allocated[0])
    assert out[:, 0].tolist() == [10 * r + 2 * RANK for r in range(SIZE)]


def test_alltoall_bad_splits_say_why():
    with pytest.raises(ValueError, match="splits for a process set"):
        hvd.alltoall(torch.ones(4), [4] * (SIZE + 1))
    if SIZE > 1:
        with pytest.raises(ValueError, match="divisible"):
            hvd.alltoall(torch.ones(SIZE + 1))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_grouped_allreduce_scaled(dtype):
    before = _device_path.taken[DEVICE]
    tensors = [rank_tensor(RANK, [n], dtype, seed=n) for n in (1, 7, 64)]
    outs = hvd.grouped_allreduce(tensors, op=hvd.Sum, prescale_factor=0.5,
                                 postscale_factor=4.0)
    assert _device_path.taken[DEVICE] >= before + 3
    for n, out in zip((1, 7, 64), outs):
        want = sum(rank_tensor(r, [n], torch.float64, seed=n)
                   for r in range(SIZE)) * 2.0
        assert out.dtype == dtype
        tol = 1e-2 if dtype in (torch.float16, torch.bfloat16) else 1e-6
        assert torch.allclose(out.double(), want, rtol=tol, atol=tol)


def test_allreduce_async_in_place():
    t = torch.full((33,), float(RANK + 1))
    hvd.synchronize(hvd.allreduce_async_(t, op=hvd.Max))
    assert t.tolist() == [float(SIZE)] * 33


def test_broadcast():
    t = torch.full((5, 2), float(RANK))
    out = hvd.broadcast(t, SIZE - 1)
    assert out.tolist() == [[float(SIZE - 1)] * 2] * 5
    assert t[0, 0].item() == float(RANK)  # a new tensor
    hvd.broadcast_(t, 0)
    assert t.tolist() == [[0.0] * 2] * 5


def test_reducescatter_uneven():
    rows = 2 * SIZE + 1
    t = torch.arange(rows * 2, dtype=torch.float32).view(rows, 2)
    out = hvd.reducescatter(t, op=hvd.Sum)
    mine = rows // SIZE + (1 if RANK < rows % SIZE else 0)
    first = sum(rows // SIZE + (1 if r < rows % SIZE else 0)
                for r in range(RANK))
    assert torch.equal(out, t[first:first + mine] * SIZE)
    outs = hvd.grouped_reducescatter([t, t[:, 0].contiguous()], op=hvd.Sum)
    assert torch.equal(outs[1], t[first:first + mine, 0] * SIZE)


def test_sparse_allreduce():
    i = torch.tensor([[RANK, SIZE]])
    v = torch.tensor([1.0, 2.0])
    s = torch.sparse_coo_tensor(i, v, (SIZE + 1,))
    out = hvd.synchronize(hvd.sparse_allreduce_async(s, "dp.sparse",
                                                     hvd.Sum))
    want = torch.ones(SIZE + 1)
    want[SIZE] = 2.0 * SIZE
    assert torch.equal(out.to_dense(), want)


def test_outputs_of_the_wrong_shape_fail_the_op(monkeypatch):
    def too_short(tensors, rows):
        return [_device_path.empty_like_on(t, (1,) + tuple(t.shape[1:]))
                for t in tensors]

    monkeypatch.setattr(_device_path, "allgather_outputs", too_short)
    with pytest.raises(HorovodInternalError, match="wrong dtype or shape"):
        hvd.allgather(torch.ones(2, 3), name="dp.wrong_shape")


def test_an_output_missing_fails_the_op(monkeypatch):
    def first_only(tensors, rows):
        rows_out = int(rows[:, 0].sum())
        return [_device_path.empty_like_on(tensors[0], (rows_out,))]

    monkeypatch.setattr(_device_path, "allgather_outputs", first_only)
    with pytest.raises(HorovodInternalError,
                       match="could not allocate output 1"):
        hvd.grouped_allgather([torch.ones(1), torch.ones(2)],
                              name="dp.missing_output")
