"""CUDA tensors through horovod.torch: results land on the tensor's device,
ordered after the work queued on the current stream. Skipped where torch
sees no GPU. The binding hands CUDA tensors to the core as they are (the
core reports through hvd_accepts_memory that it takes them, and moves them
directly or stages them through host memory itself), on the core's stream
of the device, which waits for torch's current stream; allgather's and
alltoall's outputs are allocated on the device by the binding
(horovod.torch._device_path). tests/torch/test_device_path.py runs the same
route on the fake device without a GPU."""

import pytest
import torch

import horovod.torch as hvd
from horovod.torch import _device_path, _tensors

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(),
                                reason="no CUDA device")

hvd.init()
RANK, SIZE = hvd.rank(), hvd.size()


def device():
    return torch.device("cuda", hvd.local_rank() % torch.cuda.device_count())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16,
                                   torch.bfloat16, torch.int64])
def test_allreduce_cuda(dtype):
    dev = device()
    # Queue work on the stream first: the op must see its result.
    t = torch.ones(1 << 16, device=dev, dtype=dtype).mul_(RANK + 1)
    out = hvd.allreduce(t, op=hvd.Sum)
    assert out.device == dev and out.dtype == dtype
    assert torch.equal(out.cpu(), torch.full((1 << 16,),
                                             SIZE * (SIZE + 1) // 2,
                                             dtype=dtype))
    hvd.allreduce_(t, op=hvd.Max)
    assert torch.equal(t.cpu(), torch.full((1 << 16,), SIZE, dtype=dtype))


def test_allgather_broadcast_alltoall_cuda():
    dev = device()
    g = hvd.allgather(torch.full((RANK + 1, 3), RANK, device=dev))
    assert g.device == dev
    assert g[:, 0].tolist() == [r for r in range(SIZE) for _ in range(r + 1)]
    b = torch.full((5,), float(RANK), device=dev)
    hvd.broadcast_(b, SIZE - 1)
    assert b.device == dev and b.tolist() == [float(SIZE - 1)] * 5
    a = hvd.alltoall(torch.arange(SIZE, device=dev) + 10 * RANK)
    assert a.device == dev
    assert a.tolist() == [10 * r + RANK for r in range(SIZE)]
    rs = hvd.reducescatter(torch.ones(SIZE * 2, device=dev), op=hvd.Sum)
    assert rs.device == dev and rs.tolist() == [float(SIZE)] * 2


def late(value, n, dev):
    """n copies of `value` on `dev`, written by work queued behind a long
    kernel on the current stream: an op that does not wait for that stream
    reads zeros."""
    t = torch.zeros(n, device=dev)
    torch.cuda._sleep(50_000_000)
    return t.fill_(value)


def test_every_collective_on_the_device_route():
    dev = device()
    before = _device_path.taken[_device_path.DEVICE]
    assert _device_path.stream_for([torch.ones(1, device=dev)]) != 0
    x = late(RANK + 1, 4, dev)
    grouped = hvd.grouped_allreduce([x, x * 2], op=hvd.Sum)
    total = float(SIZE * (SIZE + 1) // 2)
    assert [g.device for g in grouped] == [dev, dev]
    assert grouped[0].tolist() == [total] * 4
    assert grouped[1].tolist() == [2 * total] * 4
    g = hvd.grouped_allgather([late(RANK, RANK + 1, dev),
                               torch.full((2, 2), float(RANK), device=dev)])
    assert [t.device for t in g] == [dev, dev]
    assert g[0].tolist() == [float(r) for r in range(SIZE)
                             for _ in range(r + 1)]
    assert g[1][:, 0].tolist() == [r for r in range(SIZE) for _ in range(2)]
    b = hvd.broadcast(late(RANK, 3, dev), SIZE - 1)
    assert b.device == dev and b.tolist() == [float(SIZE - 1)] * 3
    splits = torch.tensor([r + 1 for r in range(SIZE)])
    a, received = hvd.alltoall(
        late(RANK, int(splits.sum()), dev), splits)
    assert a.device == dev and received.tolist() == [RANK + 1] * SIZE
    assert a.tolist() == [float(r) for r in range(SIZE)
                          for _ in range(RANK + 1)]
    rs = hvd.grouped_reducescatter([late(1, 2 * SIZE, dev)],
                                   op=hvd.Sum)
    assert rs[0].device == dev and rs[0].tolist() == [float(SIZE)] * 2
    s = torch.sparse_coo_tensor(torch.tensor([[RANK]], device=dev),
                                torch.ones(1, device=dev), (SIZE,))
    dense = hvd.synchronize(hvd.sparse_allreduce_async(
        s, "gpu.sparse", hvd.Sum)).to_dense()
    assert dense.device == dev and dense.tolist() == [1.0] * SIZE
    assert _device_path.taken[_device_path.DEVICE] >= before + 10


def test_allreduce_grad_cuda():
    t = torch.ones(4, device=device(), requires_grad=True)
    hvd.allreduce(t, op=hvd.Sum).sum().backward()
    assert t.grad.device == t.device
    assert t.grad.tolist() == [float(SIZE)] * 4


def test_core_takes_cuda_tensors():
    assert _tensors.core_accepts(device())


def test_grouped_allreduce_of_mixed_devices_is_refused():
    with pytest.raises(Exception, match="CUDA device .* and host device 0"):
        hvd.grouped_allreduce([torch.ones(3, device=device()),
                               torch.ones(3)], name="mixed")
