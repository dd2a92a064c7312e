"""Training with horovod.mxnet: a DistributedTrainer or DistributedOptimizer
step on each rank's shard equals one step of plain MXNet on the whole batch
(computed here too, on one process), broadcast_parameters and the object
collectives. Run under horovodrun on 1, 2 and 3 ranks."""

import warnings

import mxnet as mx
import numpy as np
import pytest
from mxnet import autograd, gluon

import horovod.mxnet as hvd

hvd.init()
RANK, SIZE = hvd.rank(), hvd.size()
BATCH = 4  # per rank
IN, HIDDEN, OUT = 6, 5, 3


def make_net(values=None):
    net = gluon.nn.Sequential()
    net.add(gluon.nn.Dense(HIDDEN, in_units=IN, activation="tanh"),
            gluon.nn.Dense(OUT, in_units=HIDDEN))
    net.initialize(mx.init.Normal(0.5))
    if values is not None:
        for p, v in zip(net.collect_params().values(), values):
            p.set_data(mx.nd.array(v))
    return net


def start_values():
    """The same starting weights on every rank."""
    gen = np.random.default_rng(3)
    return [gen.normal(size=p.shape).astype(np.float32)
            for p in make_net().collect_params().values()]


def whole_batch(step):
    gen = np.random.default_rng(100 + step)
    data = gen.normal(size=(SIZE * BATCH, IN)).astype(np.float32)
    label = gen.integers(0, OUT, size=SIZE * BATCH).astype(np.float32)
    return data, label


def run_steps(net, trainer, steps, shard):
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    for step in range(steps):
        data, label = whole_batch(step)
        if shard:
            rows = slice(RANK * BATCH, (RANK + 1) * BATCH)
            data, label = data[rows], label[rows]
        with autograd.record():
            loss = loss_fn(net(mx.nd.array(data)), mx.nd.array(label))
        loss.backward()
        trainer.step(len(data))
    return [p.data().asnumpy() for p in net.collect_params().values()]


def one_rank_reference(steps, sgd):
    net = make_net(start_values())
    trainer = gluon.Trainer(net.collect_params(), "sgd", dict(sgd),
                            kvstore=None)
    return run_steps(net, trainer, steps, shard=False)


SGD = {"learning_rate": 0.5, "momentum": 0.9, "wd": 0.01}


def assert_same(got, want, tol):
    for g, w in zip(got, want):
        assert np.allclose(g, w, rtol=tol, atol=tol), np.abs(g - w).max()


@pytest.mark.parametrize("compression,predivide,groups,tol", [
    (hvd.Compression.none, 1.0, 0, 1e-5),
    (hvd.Compression.none, 2.0, 0, 1e-5),
    (hvd.Compression.none, 1.0, 2, 1e-5),
    (hvd.Compression.fp16, 1.0, 0, 2e-2),
], ids=["plain", "predivide", "groups", "fp16"])
def test_trainer_step_is_the_whole_batch_step(compression, predivide, groups,
                                              tol):
    net = make_net(start_values())
    trainer = hvd.DistributedTrainer(net.collect_params(), "sgd", dict(SGD),
                                     compression=compression,
                                     gradient_predivide_factor=predivide,
                                     num_groups=groups,
                                     prefix=f"t{predivide}.{groups}.")
    assert trainer._scale == pytest.approx(predivide / SIZE)
    got = run_steps(net, trainer, 3, shard=True)
    if SIZE == 1 and predivide != 1.0:
        # As in Horovod 0.28: one rank skips the allreduce (and its
        # prescaling) but keeps the factor in the rescaling.
        return
    assert_same(got, one_rank_reference(3, SGD), tol)
    if SIZE > 1:  # the step really moved the weights
        assert not np.allclose(got[0], start_values()[0])


@pytest.mark.parametrize("predivide,groups,aggregate", [
    (1.0, 0, 4), (2.0, 0, 0), (1.0, 2, 4)],
    ids=["aggregated", "predivide-one-at-a-time", "groups"])
def test_distributed_optimizer_step_is_the_whole_batch_step(
        predivide, groups, aggregate):
    net = make_net(start_values())
    # As Horovod's scripts do: rescale_grad averages the local batch; the
    # wrapper divides by size() too.
    inner = mx.optimizer.SGD(rescale_grad=1.0 / BATCH, **SGD)
    inner.aggregate_num = aggregate
    opt = hvd.DistributedOptimizer(inner, gradient_predivide_factor=predivide,
                                   num_groups=groups)
    assert opt.rescale_grad == pytest.approx(predivide / (BATCH * SIZE))
    trainer = gluon.Trainer(net.collect_params(), opt, kvstore=None)
    got = run_steps(net, trainer, 3, shard=True)
    if SIZE == 1 and predivide != 1.0:
        return  # as for DistributedTrainer
    assert_same(got, one_rank_reference(3, SGD), 1e-5)


def test_distributed_optimizer_with_an_updater():
    # The Module API's path: an Updater over the wrapped optimizer.
    inner = mx.optimizer.SGD(learning_rate=1.0, rescale_grad=1.0)
    updater = mx.optimizer.get_updater(hvd.DistributedOptimizer(inner))
    weight = mx.nd.ones((3,))
    grad = mx.nd.ones((3,)) * (RANK + 1)
    updater(0, grad, weight)
    # weight -= lr * sum(grads) / size
    assert np.allclose(weight.asnumpy(), 1 - TOTAL_OVER_SIZE)


TOTAL_OVER_SIZE = (SIZE + 1) / 2


def test_trainer_unwraps_a_distributed_optimizer():
    net = make_net(start_values())
    opt = hvd.DistributedOptimizer(mx.optimizer.SGD(learning_rate=0.1))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trainer = hvd.DistributedTrainer(net.collect_params(), opt,
                                         prefix="unwrapped.")
    assert any("unwrapped" in str(w.message) for w in caught)
    assert not isinstance(trainer._optimizer, hvd.DistributedOptimizer)


def test_bad_arguments():
    net = make_net()
    with pytest.raises(ValueError):
        hvd.DistributedTrainer(net.collect_params(), "sgd", num_groups=-1)
    with pytest.raises(ValueError):
        hvd.DistributedTrainer(net.collect_params(), "sgd", prefix=3)
    with pytest.raises(ValueError):
        hvd.broadcast_parameters([mx.nd.ones((1,))])


# ---- broadcast_parameters and objects ----------------------------------------

def test_broadcast_parameters_of_a_parameter_dict():
    mx.random.seed(RANK)  # different weights on every rank
    net = make_net()
    root_values = None
    for root in range(SIZE):
        hvd.broadcast_parameters(net.collect_params(), root_rank=root,
                                 prefix=f"bp{root}.")
        mine = [p.data().asnumpy() for p in net.collect_params().values()]
        everyone = hvd.allgather_object(mine)
        for theirs in everyone:
            assert_same(theirs, mine, 0)
        root_values = mine
    assert root_values is not None


def test_broadcast_parameters_deferred_initialisation():
    mx.random.seed(10 + RANK)
    net = gluon.nn.Dense(4)  # in_units inferred at the first forward pass
    net.initialize()
    hvd.broadcast_parameters(net.collect_params(), root_rank=0,
                             prefix="deferred.")
    net(mx.nd.ones((2, 7)))  # initialises, then broadcasts
    mine = net.weight.data().asnumpy()
    assert all(np.array_equal(theirs, mine)
               for theirs in hvd.allgather_object(mine))


def test_broadcast_parameters_of_a_dict_of_arrays():
    params = {"b": mx.nd.ones((2,)) * RANK, "a": mx.nd.ones((3, 1)) * RANK}
    hvd.broadcast_parameters(params, root_rank=SIZE - 1, prefix="dict.")
    assert np.array_equal(params["a"].asnumpy(), np.full((3, 1), SIZE - 1))
    assert np.array_equal(params["b"].asnumpy(), np.full(2, SIZE - 1))


def test_broadcast_object():
    obj = {"rank": RANK, "values": list(range(RANK + 2))} if RANK == 0 \
        else None
    assert hvd.broadcast_object(obj) == {"rank": 0, "values": [0, 1]}
    assert hvd.broadcast_object(RANK, root_rank=SIZE - 1,
                                name="last") == SIZE - 1


def test_allgather_object():
    got = hvd.allgather_object({"r": RANK, "pad": "x" * RANK})
    assert got == [{"r": r, "pad": "x" * r} for r in range(SIZE)]
