"""horovod.torch's ops go through horovod.common._native (the stable-ABI
extension), and its per-name op descriptors stay right when a name comes
back with other tensors, shapes, dtypes or arguments. Run under horovodrun
-np 2 and -np 3."""

import pytest
import torch

import horovod.torch as hvd
from horovod.common import _capi
from conftest import every_rank

hvd.init()
RANK, SIZE = hvd.rank(), hvd.size()
native = _capi.native


def expected_sum(shape, dtype, seed):
    return sum(every_rank(shape, dtype, seed))


def test_the_extension_is_the_stable_abi_build():
    assert native.__name__ == "horovod.common._native"
    assert native.__file__.endswith("_native.abi3.so")


def test_async_ops_hold_a_native_handle():
    x = torch.full((3,), float(RANK + 1))
    handle = hvd.allreduce_async(x, name="native.handle", op=hvd.Sum)
    assert isinstance(handle, int)  # Horovod's handles are ints
    assert isinstance(hvd.mpi_ops._handles.core_of(handle), native.Handle)
    while not hvd.poll(handle):
        pass
    assert torch.equal(hvd.synchronize(handle),
                       torch.full((3,), float(SIZE * (SIZE + 1) // 2)))


def test_many_handles_finish_in_any_order():
    tensors = [torch.full((k + 1,), float(RANK + k)) for k in range(8)]
    handles = [hvd.allreduce_async_(t, name=f"native.many.{k}", op=hvd.Sum)
               for k, t in enumerate(tensors)]
    for k in reversed(range(8)):
        hvd.synchronize(handles[k])
        want = sum(r + k for r in range(SIZE))
        assert torch.equal(tensors[k], torch.full((k + 1,), float(want)))


def test_a_reused_name_reads_each_calls_tensor():
    a = torch.full((4,), float(RANK))
    b = torch.full((4,), float(10 * RANK))
    for _ in range(3):
        hvd.allreduce_(a, name="native.reused", op=hvd.Sum)
        hvd.allreduce_(b, name="native.reused", op=hvd.Sum)
    total = sum(range(SIZE))
    assert torch.equal(a, torch.full((4,), float(total * SIZE ** 2)))
    assert torch.equal(b, torch.full((4,), float(10 * total * SIZE ** 2)))


@pytest.mark.parametrize("shape,dtype", [
    ((5,), torch.float32), ((2, 3), torch.float32), ((2, 3), torch.int64),
    ((), torch.float64), ((7,), torch.float16)])
def test_a_reused_name_with_another_shape_or_dtype(shape, dtype):
    x = every_rank(shape, dtype, seed=3)[RANK]
    out = hvd.allreduce(x, name="native.reshaped", op=hvd.Sum)
    assert out.dtype == dtype and out.shape == x.shape
    assert torch.equal(out, expected_sum(shape, dtype, seed=3))


def test_a_reused_name_with_other_arguments():
    x = torch.full((4,), float(RANK + 1))
    total = SIZE * (SIZE + 1) / 2
    name = "native.arguments"
    assert torch.equal(hvd.allreduce(x, name=name, op=hvd.Sum),
                       torch.full((4,), total))
    assert torch.allclose(hvd.allreduce(x, name=name, op=hvd.Average),
                          torch.full((4,), total / SIZE))
    assert torch.equal(hvd.allreduce(x, name=name, op=hvd.Max),
                       torch.full((4,), float(SIZE)))
    assert torch.equal(hvd.allreduce(x, name=name, op=hvd.Sum,
                                     prescale_factor=2.0),
                       torch.full((4,), 2 * total))
    grouped = hvd.grouped_allreduce([x, 2 * x, 3 * x], name=name, op=hvd.Sum)
    for k, g in enumerate(grouped, 1):
        assert torch.equal(g, torch.full((4,), k * total))
    assert torch.equal(hvd.broadcast(x, root_rank=SIZE - 1, name=name),
                       torch.full((4,), float(SIZE)))


def test_outputs_the_core_allocates():
    x = torch.full((RANK + 1, 2), float(RANK))
    gathered = hvd.allgather(x, name="native.gather")
    assert gathered.shape == (SIZE * (SIZE + 1) // 2, 2)
    rows = torch.cat([torch.full((r + 1, 2), float(r)) for r in range(SIZE)])
    assert torch.equal(gathered, rows)
    splits = [1 + (RANK + r) % 2 for r in range(SIZE)]
    out, received = hvd.alltoall(torch.arange(float(sum(splits))), splits,
                                 name="native.alltoall")
    assert received.tolist() == [1 + (r + RANK) % 2 for r in range(SIZE)]
    assert out.numel() == sum(received.tolist())
    assert 0 <= hvd.join() < SIZE


@pytest.mark.skipif(SIZE < 2, reason="needs 2 or more ranks")
def test_a_name_in_flight_twice_is_refused_at_enqueue():
    # The other ranks start the op only after the barrier, so rank 0's is
    # still in flight when it tries the name again.
    x = torch.ones(2)
    if RANK == 0:
        first = hvd.allreduce_async(x, name="native.twice")
        with pytest.raises(ValueError, match="native.twice"):
            hvd.allreduce_async(x, name="native.twice")
        hvd.barrier()
    else:
        hvd.barrier()
        first = hvd.allreduce_async(x, name="native.twice")
    assert torch.equal(hvd.synchronize(first), torch.ones(2))


@pytest.mark.skipif(SIZE < 2, reason="needs 2 or more ranks")
def test_ranks_that_disagree_fail_at_wait():
    x = torch.ones(RANK + 1)  # a shape per rank
    handle = hvd.allreduce_async(x, name="native.disagree")
    with pytest.raises(hvd.HorovodInternalError, match="native.disagree"):
        hvd.synchronize(handle)
    # The name works again, with shapes that agree.
    assert torch.equal(hvd.allreduce(torch.ones(2), name="native.disagree",
                                     op=hvd.Sum), torch.full((2,), SIZE * 1.0))


def test_a_released_handle_says_so():
    x = torch.ones(1)
    handle = hvd.allreduce_async_(x, name="native.released", op=hvd.Sum)
    core = hvd.mpi_ops._handles.core_of(handle)
    hvd.synchronize(handle)  # releases it
    with pytest.raises(ValueError, match="released"):
        core.wait()
    with pytest.raises(ValueError, match="released"):
        core.poll()


def test_bad_descriptions_are_refused():
    with pytest.raises(TypeError, match="tuple or a list"):
        native.enqueue(0, "native.bad", True, 0, 0, 1.0, 1.0, 0, "x", None,
                       None)
    with pytest.raises(TypeError, match="described by"):
        native.enqueue(0, "native.bad", True, 0, 0, 1.0, 1.0, 0, [(1, 2)],
                       None, None)
    with pytest.raises(ValueError, match="2 outputs for 1 inputs"):
        t = (0, (2, 32), (1,), -1)
        native.enqueue(0, "native.bad", True, 0, 0, 1.0, 1.0, 0, [t],
                       [t, t], None)
    with pytest.raises(TypeError, match="name"):
        native.enqueue(0, 7, True, 0, 0, 1.0, 1.0, 0, [], None, None)


def test_bad_arguments_are_named():
    args = [0, "native.args", True, 0, 0, 1.0, 1.0, 0, [], None, None]
    with pytest.raises(TypeError, match=r"run\(\) takes 11 to 13 arguments "
                                        r"\(10 given\)"):
        native.run(*args[:10])
    for at, bad, name in [(0, "x", "collective"), (3, 1.5, "process_set"),
                          (5, "x", "prescale"), (7, None, "root")]:
        wrong = list(args)
        wrong[at] = bad
        with pytest.raises(TypeError, match=rf"enqueue\(\): {name} must be"):
            native.enqueue(*wrong)
    with pytest.raises(OverflowError, match="reduce_op"):
        native.run(*args[:4], 2 ** 40, *args[5:])


# ---- tensors as objects, run() and enqueue_each() ---------------------------

def test_tensors_go_as_objects_and_tuples_alike():
    x = torch.full((2, 3), float(RANK + 1))
    described = (x.data_ptr(), (_capi.DL_FLOAT, 32), tuple(x.shape), -1)
    native.run(_capi.COLL_ALLREDUCE, "native.object", True, 0, _capi.OP_SUM,
               1.0, 1.0, 0, [x], None, None)
    native.run(_capi.COLL_ALLREDUCE, "native.object", True, 0, _capi.OP_SUM,
               1.0, 1.0, 0, [described], None, None)
    total = SIZE * (SIZE + 1) // 2
    assert torch.equal(x, torch.full((2, 3), float(total * SIZE)))


def test_an_object_of_another_dtype_names_it_and_the_op():
    x = torch.zeros(2, dtype=torch.complex64)
    with pytest.raises(ValueError,
                       match=r"native.complex: Tensor type torch.complex64 "
                             r"is not supported"):
        native.run(_capi.COLL_ALLREDUCE, "native.complex", True, 0,
                   _capi.OP_SUM, 1.0, 1.0, 0, [x], None, None)
    with pytest.raises(ValueError, match="expected a tensor, got None"):
        native.run(_capi.COLL_ALLREDUCE, "native.none", True, 0,
                   _capi.OP_SUM, 1.0, 1.0, 0, [None], None, None)


def test_run_writes_caller_outputs():
    x = torch.full((4,), float(RANK + 1))
    out = torch.empty(4)
    native.run(_capi.COLL_ALLREDUCE, "native.run.out", True, 0,
               _capi.OP_AVERAGE, 2.0, 1.0, 0, [x], [out], None)
    assert torch.allclose(out, torch.full((4,), float(SIZE + 1)))
    assert torch.equal(x, torch.full((4,), float(RANK + 1)))


@pytest.mark.skipif(SIZE < 2, reason="needs 2 or more ranks")
def test_run_raises_naming_the_op_ranks_disagree_on():
    with pytest.raises(hvd.HorovodInternalError, match="native.run.disagree"):
        hvd.allreduce_(torch.ones(RANK + 1), name="native.run.disagree")
    assert torch.equal(hvd.allreduce_(torch.ones(2), name="native.run.disagree",
                                      op=hvd.Sum), torch.full((2,), SIZE * 1.0))


def each(names, inputs, outputs=None, op=_capi.OP_SUM):
    return native.enqueue_each(_capi.COLL_ALLREDUCE, names, True, 0, op, 1.0,
                               1.0, 0, inputs, outputs)


def test_enqueue_each_starts_one_op_per_tensor():
    tensors = [torch.full((k + 1,), float(RANK + k)) for k in range(6)]
    names = [f"native.each.{k}" for k in range(6)]
    handles = each(names, tensors)
    assert len(handles) == 6
    assert all(isinstance(h, native.Handle) for h in handles)
    for h in reversed(handles):
        h.wait()
        h.release()
    for k, t in enumerate(tensors):
        want = sum(r + k for r in range(SIZE))
        assert torch.equal(t, torch.full((k + 1,), float(want)))
    # Again, the descriptors cached: other tensors, into outputs.
    outputs = [torch.empty(k + 1) for k in range(6)]
    for h in each(names, tensors, outputs, op=_capi.OP_AVERAGE):
        h.wait()
    for k, (t, out) in enumerate(zip(tensors, outputs)):
        assert torch.equal(out, t)


@pytest.mark.skipif(SIZE < 2, reason="needs 2 or more ranks")
def test_enqueue_each_a_tensor_ranks_disagree_on_fails_on_every_rank():
    tensors = [torch.ones(3), torch.ones(RANK + 1), torch.ones(3)]
    names = ["native.each.ok.0", "native.each.disagree", "native.each.ok.2"]
    handles = each(names, tensors)
    handles[0].wait()
    with pytest.raises(hvd.HorovodInternalError,
                       match="native.each.disagree"):
        handles[1].wait()
    handles[2].wait()
    assert torch.equal(tensors[0], torch.full((3,), float(SIZE)))
    assert torch.equal(tensors[2], torch.full((3,), float(SIZE)))


def test_enqueue_each_names_a_tensor_it_cannot_start():
    first = torch.full((2,), float(RANK))
    bad = torch.zeros(2, dtype=torch.complex64)
    with pytest.raises(ValueError, match="native.each.bad.1: Tensor type"):
        each(["native.each.bad.0", "native.each.bad.1"], [first, bad])
    # What had started before it has finished when it raises.
    assert torch.equal(first, torch.full((2,), float(sum(range(SIZE)))))
    with pytest.raises(ValueError, match="2 names for 1 inputs"):
        each(["a", "b"], [first])


def test_optimizer_starts_gradients_backward_did_not_in_one_call(
        monkeypatch):
    calls = []
    enqueue_each = native.enqueue_each

    def spy(*args):
        calls.append(len(args[1]))
        return enqueue_each(*args)

    monkeypatch.setattr(native, "enqueue_each", spy)
    params = [torch.nn.Parameter(torch.zeros(k + 2)) for k in range(4)]
    opt = hvd.DistributedOptimizer(
        torch.optim.SGD(params, lr=1.0),
        named_parameters=[(f"each.p{k}", p) for k, p in enumerate(params)])
    for k, p in enumerate(params):  # no backward: every hook is silent
        p.grad = torch.full((k + 2,), float(RANK + k))
    opt.synchronize()
    assert calls == [4]
    for k, p in enumerate(params):
        want = sum(r + k for r in range(SIZE)) / SIZE
        assert torch.allclose(p.grad, torch.full((k + 2,), want))


def test_run_makes_outputs_like_its_inputs():
    made = []

    def empty_like(t):
        made.append(torch.empty_like(t))
        return made[-1]

    total = SIZE * (SIZE + 1) // 2
    name = "native.run.like"
    for shape, dtype in [((3,), torch.float32), ((2, 2), torch.float64),
                         ((3,), torch.float32)]:
        x = torch.full(shape, float(RANK + 1), dtype=dtype)
        out = native.run(_capi.COLL_ALLREDUCE, name, True, 0, _capi.OP_SUM,
                         1.0, 1.0, 0, [x], empty_like, None)
        assert isinstance(out, tuple) and len(out) == 1
        assert out[0] is made[-1]
        assert out[0].dtype == dtype and out[0].shape == shape
        assert torch.equal(out[0], torch.full(shape, total, dtype=dtype))
        assert torch.equal(x, torch.full(shape, float(RANK + 1), dtype=dtype))
    # The same name with outputs the caller gives, then made again.
    given = torch.empty(3)
    assert native.run(_capi.COLL_ALLREDUCE, name, True, 0, _capi.OP_SUM, 1.0,
                      1.0, 0, [x], [given], None) is None
    assert torch.equal(given, torch.full((3,), float(total)))
    out, = native.run(_capi.COLL_ALLREDUCE, name, True, 0, _capi.OP_MAX, 1.0,
                      1.0, 0, [x], torch.empty_like, None)
    assert torch.equal(out, torch.full((3,), float(SIZE)))


def test_only_run_makes_outputs():
    x = torch.ones(2)
    with pytest.raises(TypeError, match=r"run\(\) alone"):
        native.enqueue(_capi.COLL_ALLREDUCE, "native.make", True, 0,
                       _capi.OP_SUM, 1.0, 1.0, 0, [x], torch.empty_like, None)
    with pytest.raises(TypeError, match=r"run\(\) alone"):
        each(["native.make"], [x], torch.empty_like)


def _spied(monkeypatch):
    calls = []
    for fn in ("run", "enqueue", "enqueue_each"):
        real = getattr(native, fn)

        def spy(*args, _fn=fn, _real=real):
            calls.append(_fn)
            return _real(*args)

        monkeypatch.setattr(native, fn, spy)
    return calls


@pytest.mark.parametrize("call,want", [
    (lambda x: hvd.allreduce(x, op=hvd.Sum), "run"),
    (lambda x: hvd.allreduce(x.t(), op=hvd.Sum).t(), "run"),
    (lambda x: hvd.allreduce(x, average=False), "run"),
    (lambda x: hvd.allreduce(x, op=hvd.Sum,
                             compression=hvd.Compression.fp16), "run"),
    (lambda x: hvd.allreduce(x.clone().requires_grad_(), op=hvd.Sum), "run"),
    (lambda x: hvd.allreduce_(x.clone(), op=hvd.Sum), "run"),
    (lambda x: hvd.allreduce_(x.clone().t(), op=hvd.Sum).t(), "run"),
    (lambda x: hvd.synchronize(hvd.allreduce_async(x, op=hvd.Sum)),
     "enqueue"),
    (lambda x: hvd.synchronize(hvd.allreduce_async_(x.clone().t(),
                                                    op=hvd.Sum)).t(),
     "enqueue"),
    (lambda x: hvd.grouped_allreduce([x, x.t()], op=hvd.Sum)[0], "enqueue"),
    (lambda x: hvd.grouped_allreduce_([x.clone()], op=hvd.Sum)[0],
     "enqueue"),
])
def test_every_allreduce_takes_the_one_native_route(monkeypatch, call, want):
    calls = _spied(monkeypatch)
    x = torch.arange(6, dtype=torch.float64).reshape(2, 3) * (RANK + 1)
    out = call(x)
    assert calls == [want]
    want = torch.arange(6, dtype=torch.float64).reshape(2, 3)
    assert torch.allclose(out.detach().double(),
                          want * (SIZE * (SIZE + 1) // 2))
