"""SyncBatchNorm on N ranks matches BatchNorm on the concatenated batch,
forward and backward. Every rank runs the same tests in the same order."""

import pytest
import torch

import horovod.torch as hvd

if not hvd.is_initialized():
    hvd.init()

BATCH_NORMS = {2: torch.nn.BatchNorm1d, 3: torch.nn.BatchNorm1d, 4: torch.nn.BatchNorm2d,
               5: torch.nn.BatchNorm3d}


def rows_of(r, uneven):
    return r + 1 if uneven else 3


def global_input(shape_tail, uneven, seed, dtype=torch.float64):
    rows = [rows_of(r, uneven) for r in range(hvd.size())]
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(sum(rows), *shape_tail, generator=gen, dtype=dtype) * 3 + 1
    start = sum(rows[:hvd.rank()])
    return x, slice(start, start + rows[hvd.rank()])


def pair(channels, dtype=torch.float64, **kwargs):
    sync = hvd.SyncBatchNorm(channels, **kwargs).to(dtype)
    ref = torch.nn.BatchNorm1d(channels, **kwargs).to(dtype)
    if sync.weight is not None:
        with torch.no_grad():
            w = torch.linspace(0.5, 1.5, channels, dtype=dtype)
            for m in (sync, ref):
                m.weight.copy_(w)
                m.bias.copy_(-w)
    return sync, ref


def reference_module(ndim, channels, dtype, **kwargs):
    ref = BATCH_NORMS[ndim](channels, **kwargs).to(dtype)
    if ref.weight is not None:
        with torch.no_grad():
            w = torch.linspace(0.5, 1.5, channels, dtype=dtype)
            ref.weight.copy_(w)
            ref.bias.copy_(-w)
    return ref


def sum_over_ranks(t):
    return hvd.allreduce(t, op=hvd.Sum, name='test_sbn.sum')


@pytest.mark.parametrize('shape_tail, uneven, affine', [
    ((4,), False, True), ((4,), True, False), ((4, 5), True, True),
    ((3, 2, 2), False, True), ((3, 2, 2), True, False), ((2, 2, 2, 2), True, True)])
def test_matches_batch_norm_on_concatenated_batch(shape_tail, uneven, affine):
    channels = shape_tail[0]
    ndim = 1 + len(shape_tail)
    sync, _ = pair(channels, affine=affine)
    ref = reference_module(ndim, channels, torch.float64, affine=affine)
    x, mine = global_input(shape_tail, uneven, seed=len(shape_tail))
    upstream = torch.randn(x.shape, generator=torch.Generator().manual_seed(99), dtype=x.dtype)

    x_local = x[mine].clone().requires_grad_()
    out = sync(x_local)
    (out * upstream[mine]).sum().backward()

    x_ref = x.clone().requires_grad_()
    out_ref = ref(x_ref)
    (out_ref * upstream).sum().backward()

    torch.testing.assert_close(out, out_ref[mine])
    torch.testing.assert_close(x_local.grad, x_ref.grad[mine])
    torch.testing.assert_close(sync.running_mean, ref.running_mean)
    torch.testing.assert_close(sync.running_var, ref.running_var)
    assert int(sync.num_batches_tracked) == 1
    if affine:
        # Weight and bias gradients are this rank's share; their sum over
        # ranks is the full batch's.
        torch.testing.assert_close(sum_over_ranks(sync.weight.grad), ref.weight.grad)
        torch.testing.assert_close(sum_over_ranks(sync.bias.grad), ref.bias.grad)


def test_several_steps_and_eval_mode_match():
    sync, ref = pair(3, momentum=None)
    for step in range(3):
        x, mine = global_input((3,), uneven=True, seed=step)
        sync(x[mine])
        ref(x)
    torch.testing.assert_close(sync.running_mean, ref.running_mean)
    torch.testing.assert_close(sync.running_var, ref.running_var)
    sync.eval()
    ref.eval()
    probe = torch.randn(2, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(5))
    torch.testing.assert_close(sync(probe), ref(probe))


def test_without_running_stats_uses_batch_stats_in_eval():
    sync, ref = pair(3, track_running_stats=False)
    sync.eval()
    ref.eval()
    x, mine = global_input((3,), uneven=False, seed=4)
    torch.testing.assert_close(sync(x[mine]), ref(x)[mine])


def test_float32_input():
    sync, ref = pair(4, dtype=torch.float32)
    x, mine = global_input((4,), uneven=False, seed=8, dtype=torch.float32)
    torch.testing.assert_close(sync(x[mine]), ref(x)[mine], rtol=1e-5, atol=1e-5)
    assert sync(x[mine]).dtype == torch.float32


def test_trains_inside_a_model_with_distributed_optimizer():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), hvd.SyncBatchNorm(4),
                                torch.nn.Linear(4, 1)).double()
    torch.manual_seed(0)
    reference = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4),
                                    torch.nn.Linear(4, 1)).double()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                   named_parameters=model.named_parameters())
    ref_opt = torch.optim.SGD(reference.parameters(), lr=0.1)
    for step in range(2):
        x, mine = global_input((3,), uneven=False, seed=20 + step)
        target = x.sum(dim=1, keepdim=True)
        opt.zero_grad()
        # Sum of per-rank losses scaled like the mean over ranks.
        (torch.nn.functional.mse_loss(model(x[mine]), target[mine], reduction='sum')
         * hvd.size() / x.shape[0]).backward()
        opt.step()
        ref_opt.zero_grad()
        ref_loss = torch.nn.functional.mse_loss(reference(x), target, reduction='sum')
        (ref_loss / x.shape[0]).backward()
        ref_opt.step()
    for a, b in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(a, b)


def test_rejects_1d_input():
    with pytest.raises(ValueError, match='expected at least 2D input'):
        hvd.SyncBatchNorm(3)(torch.ones(3))
