"""Horovod 0.28's horovod.torch contracts that scripts rely on beyond the
collectives' values: errors for refused ops and bad arguments, the
optimizer's names, the private helpers Horovod's scripts import. Run under
horovodrun -np 2 and -np 3."""

import threading

import pytest
import torch

import horovod.torch as hvd

hvd.init()
RANK, SIZE = hvd.rank(), hvd.size()


# ---- refused ops and bad arguments -------------------------------------------

def test_reducescatter_refuses_adasum_as_horovod():
    # Horovod refuses it at the call, with a RuntimeError (its
    # HorovodInternalError) saying which ops reducescatter takes.
    t = torch.ones(SIZE * 2)
    for call in (lambda: hvd.reducescatter(t, op=hvd.Adasum),
                 lambda: hvd.reducescatter_async(t, op=hvd.Adasum),
                 lambda: hvd.grouped_reducescatter([t], op=hvd.Adasum),
                 lambda: hvd.grouped_reducescatter_async([t],
                                                         op=hvd.Adasum)):
        with pytest.raises(hvd.HorovodInternalError,
                           match="only supports SUM and AVERAGE"):
            call()
    # Nothing was left pending: the next collective pairs up as usual.
    assert torch.equal(hvd.allreduce(torch.ones(2), op=hvd.Sum),
                       torch.full((2,), float(SIZE)))


@pytest.mark.parametrize("call", [
    lambda: hvd.allreduce(None), lambda: hvd.allreduce_(None),
    lambda: hvd.allreduce_async(None), lambda: hvd.grouped_allreduce([None]),
    lambda: hvd.allgather(None), lambda: hvd.grouped_allgather([None]),
    lambda: hvd.broadcast(None, 0), lambda: hvd.broadcast_(None, 0),
    lambda: hvd.broadcast_async(None, 0), lambda: hvd.alltoall(None),
    lambda: hvd.reducescatter(None),
    lambda: hvd.grouped_reducescatter([None]),
], ids=["allreduce", "allreduce_", "allreduce_async", "grouped_allreduce",
        "allgather", "grouped_allgather", "broadcast", "broadcast_",
        "broadcast_async", "alltoall", "reducescatter",
        "grouped_reducescatter"])
def test_none_is_a_value_error(call):
    with pytest.raises(ValueError, match="expected a torch.Tensor, got None"):
        call()


def test_alltoall_received_splits_keep_the_splits_dtype():
    t = torch.arange(float(SIZE))
    for splits, dtype in ((torch.ones(SIZE, dtype=torch.int64), torch.int64),
                          (torch.ones(SIZE, dtype=torch.int32), torch.int32),
                          ([1] * SIZE, torch.int32)):
        out, received = hvd.alltoall(t, splits=splits)
        assert received.dtype == dtype and received.tolist() == [1] * SIZE
        assert out.tolist() == [float(RANK)] * SIZE


def test_grouped_async_results_are_tuples():
    ts = [torch.ones(2), torch.ones(3)]
    for start in (hvd.grouped_allreduce_async, hvd.grouped_allreduce_async_,
                  hvd.grouped_allgather_async,
                  hvd.grouped_reducescatter_async):
        out = hvd.synchronize(start(ts))
        assert isinstance(out, tuple) and len(out) == 2, start.__name__


# ---- DistributedOptimizer ----------------------------------------------------

def test_distributed_optimizer_without_names_over_param_groups():
    # Unnamed parameters of several groups get names unique across groups
    # and equal on every rank, so their allreduces pair up.
    torch.manual_seed(0)
    first, second = torch.nn.Linear(3, 2), torch.nn.Linear(2, 1)
    base = torch.optim.SGD([{'params': first.parameters()},
                            {'params': second.parameters(), 'lr': 0.5}],
                           lr=0.1)
    opt = hvd.DistributedOptimizer(base)
    names = sorted(opt._parameter_names.values())
    assert names == ['allreduce.noname.0.0', 'allreduce.noname.0.1',
                     'allreduce.noname.1.0', 'allreduce.noname.1.1']
    x = torch.full((4, 3), float(RANK + 1))
    opt.zero_grad()
    second(first(x)).sum().backward()
    opt.synchronize()
    grads = [p.grad.clone() for p in first.parameters()]
    with opt.skip_synchronize():
        opt.step()
    # Every rank ends with the same (averaged) gradients.
    for g in grads:
        gathered = hvd.allgather(g.unsqueeze(0))
        assert all(torch.equal(gathered[0], gathered[r])
                   for r in range(SIZE))


# ---- private names Horovod's scripts and tests import ------------------------

def test_is_version_greater_equal_than():
    from horovod.common.util import is_version_greater_equal_than as at_least
    assert at_least(torch.__version__, "1.0.0")
    assert at_least("2.1.0", "2.1.0") and at_least("2.10.0", "2.9.0")
    assert not at_least("2.1.0rc1", "2.1.0")
    assert at_least("2.1.0+cu118", "2.1.0")
    assert not at_least("1.13.1", "2.0.0")
    with pytest.raises(ValueError):
        at_least(2, "1.0.0")
    with pytest.raises(ValueError):
        at_least("2.1.0", "2.1")


def test_in_thread():
    from horovod.runner.util.threads import in_thread
    seen = []
    thread = in_thread(seen.append, args=(1,), name="worker")
    thread.join(10)
    assert seen == [1] and thread.daemon and thread.name == "worker"

    def fails():
        raise RuntimeError("boom")
    caught = []
    old_hook = threading.excepthook
    threading.excepthook = caught.append
    try:
        in_thread(fails, silent=True).join(10)
        assert caught == []
        in_thread(fails, daemon=False).join(10)
        assert len(caught) == 1
    finally:
        threading.excepthook = old_hook
    with pytest.raises(ValueError, match="tuple"):
        in_thread(seen.append, args=[1])


def test_adasum_refusals_as_horovod():
    # Horovod refuses, at the call, Adasum on a rank count that is not a
    # power of two (CPU tensors).
    t = torch.ones(4)
    if SIZE & (SIZE - 1):
        with pytest.raises(NotImplementedError, match="non-power of 2 ranks"):
            hvd.allreduce(t, op=hvd.Adasum)
        with pytest.raises(NotImplementedError, match="non-power of 2 ranks"):
            hvd.allreduce_async_(t, op=hvd.Adasum)
    else:
        out = hvd.allreduce(t * (RANK + 1), op=hvd.Adasum)
        assert out.shape == t.shape
