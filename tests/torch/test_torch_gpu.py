"""CUDA tensors through horovod.torch: results land on the tensor's device,
ordered after the work queued on the current stream. Skipped where torch
sees no GPU. The binding hands CUDA tensors to the core as they are (the
core reports through hvd_accepts_memory that it takes them, and moves them
directly or stages them through host memory itself)."""

import pytest
import torch

import horovod.torch as hvd
from horovod.torch import _tensors

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
