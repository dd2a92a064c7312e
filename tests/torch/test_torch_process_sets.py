"""Process sets, shutdown and re-init, ops before init, timeline: each test
starts and stops the runtime itself. Run under horovodrun -np 2 and -np 3."""

import json
import os

import pytest
import torch

import horovod.torch as hvd
from horovod.common.process_sets import ProcessSet

# Known before init from the launcher, for building the sets.
SIZE = int(os.environ.get("HOROVOD_SIZE", "1"))
RANK = int(os.environ.get("HOROVOD_RANK", "0"))


@pytest.fixture
def sets():
    even = ProcessSet(range(0, SIZE, 2))
    odd = ProcessSet(range(1, SIZE, 2)) if SIZE > 1 else None
    first_two = ProcessSet([1, 0] if SIZE > 1 else [0])
    static = [s for s in (even, odd, first_two) if s is not None]
    hvd.init(process_sets=static)
    yield even, odd, first_two
    hvd.barrier()
    hvd.shutdown()


def test_not_initialized_errors():
    assert not hvd.is_initialized()
    for query in (hvd.rank, hvd.size, hvd.local_rank, hvd.local_size,
                  hvd.cross_rank, hvd.cross_size, hvd.is_homogeneous):
        with pytest.raises(ValueError, match="not been initialized"):
            query()
    with pytest.raises(ValueError):
        hvd.allreduce(torch.ones(2))
    with pytest.raises(ValueError):
        hvd.join()


def test_reinit_after_shutdown():
    for round_ in range(3):
        hvd.init()
        assert hvd.is_initialized() and hvd.size() == SIZE
        out = hvd.allreduce(torch.ones(3) * round_, op=hvd.Sum,
                            name="same.name")
        assert torch.equal(out, torch.ones(3) * round_ * SIZE)
        hvd.init()  # a second init is a no-op, as in Horovod
        hvd.barrier()
        hvd.shutdown()
        assert not hvd.is_initialized()
    hvd.shutdown()  # shutting down twice is fine


def test_pending_op_fails_at_shutdown():
    hvd.init()
    h = None
    if SIZE > 1 and RANK == 0:
        # Nobody else submits this one: shutdown fails it. Submitted before
        # the barrier, since another rank's shutdown after it stops this
        # rank's runtime too and would refuse a later submission.
        h = hvd.allreduce_async(torch.ones(2), name="never.matched")
    hvd.barrier()
    hvd.shutdown()
    if h is not None:
        with pytest.raises(hvd.HorovodInternalError):
            hvd.synchronize(h)


def test_process_set_properties(sets):
    even, odd, first_two = sets
    assert hvd.global_process_set.process_set_id == 0
    assert hvd.global_process_set.size() == SIZE
    assert hvd.global_process_set.rank() == RANK
    assert even.process_set_id == 1 and even.ranks == list(range(0, SIZE, 2))
    assert first_two.ranks == sorted(first_two.ranks)
    assert even.included() == (RANK % 2 == 0)
    assert even.size() == len(range(0, SIZE, 2))
    assert even.rank() == (RANK // 2 if RANK % 2 == 0 else -1)
    assert "process_set_id=1" in str(even)
    with pytest.raises(ValueError):
        ProcessSet([0, "a"])


def test_process_set_collectives(sets):
    for ps in [s for s in sets if s is not None]:
        if not ps.included():
            with pytest.raises(ValueError, match="not part of"):
                hvd.allreduce(torch.ones(2), process_set=ps)
            continue
        n = ps.size()
        t = torch.ones(4) * (RANK + 1)
        total = float(sum(r + 1 for r in ps.ranks))
        assert torch.equal(hvd.allreduce(t, op=hvd.Sum, process_set=ps),
                           torch.full((4,), total))
        assert torch.allclose(hvd.allreduce(t, process_set=ps),
                              torch.full((4,), total / n))
        g = hvd.allgather(torch.full((1, 2), RANK), process_set=ps)
        assert g[:, 0].tolist() == ps.ranks
        root_world = ps.ranks[-1]  # roots are global ranks, as in Horovod
        b = hvd.broadcast(torch.full((3,), RANK), root_world, process_set=ps)
        assert torch.equal(b, torch.full((3,), root_world))
        a = hvd.alltoall(torch.full((n,), RANK), process_set=ps)
        assert a.tolist() == ps.ranks
        rs = hvd.reducescatter(torch.ones(n * 2), op=hvd.Sum, process_set=ps)
        assert torch.equal(rs, torch.full((2,), float(n)))
        grouped = hvd.grouped_allreduce([t, t * 2], op=hvd.Sum,
                                        process_set=ps)
        assert torch.equal(grouped[1], torch.full((4,), 2 * total))
        hvd.barrier(process_set=ps)


def set_weight_mean(ps):
    """The average over the set of the weights r + 1 of its ranks."""
    return sum(r + 1 for r in ps.ranks) / ps.size()


def test_process_set_gradients(sets):
    # Horovod's gradients within a set: each rank r of the set feeds the
    # output gradient (r + 1) * ones; averages and sums are over the set.
    for ps in [s for s in sets if s is not None and s.included()]:
        n, weight = ps.size(), RANK + 1
        mean = set_weight_mean(ps)
        x = torch.ones(2, 3, requires_grad=True)
        hvd.allreduce(x, op=hvd.Sum, process_set=ps).backward(
            torch.ones(2, 3) * weight)
        assert torch.equal(x.grad, torch.full((2, 3), mean * n))
        xs = [torch.ones(2, requires_grad=True), torch.ones(1, requires_grad=True)]
        outs = hvd.grouped_allreduce(xs, process_set=ps)
        (sum(o.sum() for o in outs) * weight).backward()
        assert all(torch.allclose(t.grad, torch.full_like(t, mean))
                   for t in xs)
        x = torch.ones(1, 2, requires_grad=True)
        hvd.allgather(x, process_set=ps).backward(torch.ones(n, 2) * weight)
        assert torch.allclose(x.grad, torch.full((1, 2), mean))
        xs = [torch.ones(1, 2, requires_grad=True)]
        out = hvd.grouped_allgather(xs, process_set=ps)
        out[0].backward(torch.ones(n, 2) * weight)
        assert torch.allclose(xs[0].grad, torch.full((1, 2), mean))
        root = ps.ranks[-1]
        x = torch.ones(3, requires_grad=True)
        hvd.broadcast(x, root, process_set=ps).backward(torch.ones(3) * weight)
        assert torch.allclose(x.grad, torch.full((3,), mean if RANK == root
                                                 else 0.0))
        x = torch.ones(n * 2, requires_grad=True)
        out = hvd.alltoall(x, process_set=ps)
        out.backward(torch.ones(n * 2) * weight)
        expected = torch.tensor([float(r + 1) for r in ps.ranks
                                 for _ in range(2)])
        assert torch.equal(x.grad, expected)
        for op, factor in ((hvd.Sum, n), (hvd.Average, 1)):
            x = torch.ones(n * 2, requires_grad=True)
            out = hvd.reducescatter(x, op=op, process_set=ps)
            out.backward(torch.ones(2) * weight)
            expected = torch.tensor([float((r + 1) * factor)
                                     for r in ps.ranks for _ in range(2)])
            assert torch.equal(x.grad, expected), op
            xs = [torch.ones(n * 2, requires_grad=True)]
            out = hvd.grouped_reducescatter(xs, op=op, process_set=ps)
            out[0].backward(torch.ones(2) * weight)
            assert torch.equal(xs[0].grad, expected), op
        hvd.barrier(process_set=ps)


def test_root_is_a_global_rank(sets):
    # As in Horovod, root_rank inside a process set is a global rank: with
    # even = [0, 2, ...] and odd = [1, 3, ...], odd's root 1 is rank 1.
    even, odd, first_two = sets
    for ps in [s for s in sets if s is not None and s.included()]:
        for root in ps.ranks:
            t = torch.full((2,), float(RANK))
            assert torch.equal(hvd.broadcast(t, root, process_set=ps),
                               torch.full((2,), float(root)))
            hvd.broadcast_(t, root, process_set=ps)
            assert torch.equal(t, torch.full((2,), float(root)))
            h = hvd.broadcast_async(torch.full((1,), RANK), root,
                                    process_set=ps)
            assert hvd.synchronize(h).item() == root
            obj = hvd.broadcast_object({"from": RANK}, root_rank=root,
                                       process_set=ps)
            assert obj == {"from": root}
            model = torch.nn.Linear(2, 2)
            with torch.no_grad():
                model.weight.fill_(RANK)
            hvd.broadcast_parameters(model.state_dict(), root_rank=root,
                                     process_set=ps)
            assert torch.equal(model.weight, torch.full((2, 2), float(root)))
            opt = torch.optim.SGD(model.parameters(), lr=0.1 * (RANK + 1),
                                  momentum=0.9)
            hvd.broadcast_optimizer_state(opt, root_rank=root,
                                          process_set=ps)
            assert opt.param_groups[0]['lr'] == pytest.approx(
                0.1 * (root + 1))
        # A root outside the set is refused on every member, before any
        # collective starts (so no member waits for the others).
        outsider = next((r for r in range(SIZE) if r not in ps.ranks), None)
        if outsider is not None:
            with pytest.raises(ValueError, match="invalid root rank"):
                hvd.broadcast(torch.ones(2), outsider, process_set=ps)
            with pytest.raises(ValueError, match="invalid root rank"):
                hvd.broadcast_object(1, root_rank=outsider, process_set=ps)
        hvd.barrier(process_set=ps)
    if odd is not None and odd.included():
        # The example of the issue: odd = [1] on 2 ranks, root 1.
        assert hvd.broadcast_object("x" if RANK == 1 else None, root_rank=1,
                                    process_set=odd) == "x"


def test_unregistered_process_set(sets):
    with pytest.raises(ValueError, match="not registered"):
        hvd.allreduce(torch.ones(2), process_set=ProcessSet([0]))


def test_dynamic_process_sets():
    hvd.init(process_sets="dynamic")
    try:
        try:
            ps = hvd.add_process_set([0])
        except ValueError as e:
            if "not supported" in str(e):
                pytest.skip(f"this core has no dynamic process sets: {e}")
            raise
        assert ps.process_set_id is not None and ps.ranks == [0]
        if ps.included():
            out = hvd.allreduce(torch.ones(2), op=hvd.Sum, process_set=ps)
            assert torch.equal(out, torch.ones(2))
        assert hvd.remove_process_set(ps)
        assert ps.process_set_id is None
        assert not hvd.remove_process_set(ps)
        with pytest.raises(ValueError, match="exists already"):
            hvd.add_process_set(list(range(SIZE)))  # the global set's ranks
        if SIZE > 2:
            pair = hvd.add_process_set(hvd.ProcessSet([0, SIZE - 1]))
            if pair.included():
                out = hvd.allreduce(torch.ones(1), op=hvd.Sum,
                                    process_set=pair)
                assert out.item() == 2
            else:
                with pytest.raises(ValueError, match="not part of"):
                    hvd.allreduce(torch.ones(1), process_set=pair)
            assert hvd.remove_process_set(pair)
    finally:
        hvd.barrier()
        hvd.shutdown()


def test_timeline():
    hvd.init()
    path = f"/tmp/hvd-torch-timeline-{os.environ.get('HOROVOD_JOB_ID', 'x')}"
    try:
        try:
            hvd.start_timeline(path + ".json")
        except NotImplementedError as e:
            pytest.skip(str(e))
        hvd.allreduce(torch.ones(2), name="timeline.tensor")
        hvd.stop_timeline()
        hvd.barrier()
        if RANK == 0:
            with open(path + ".json") as f:
                text = f.read()
            assert "timeline.tensor" in text
            json.loads(text)
            os.remove(path + ".json")
        with pytest.raises(ValueError):
            hvd.start_timeline("")
    finally:
        hvd.barrier()
        hvd.shutdown()
