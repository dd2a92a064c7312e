"""broadcast_parameters, broadcast_optimizer_state, broadcast_object and
allgather_object. Every rank runs the same tests in the same order."""

import collections
import copy

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import horovod.torch as hvd

if not hvd.is_initialized():
    hvd.init()


def roots():
    return sorted({0, hvd.size() - 1})


def make_model(seed):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.BatchNorm1d(6),
                               torch.nn.ReLU(), torch.nn.Linear(6, 2))


def all_equal_to_root(tensors, root):
    """Gathers every rank's tensors and checks they equal root's."""
    mine = [t.detach().clone() for t in tensors]
    everyone = hvd.allgather_object(mine, name='test_functions.check')
    for rank_tensors in everyone:
        for got, want in zip(rank_tensors, everyone[root]):
            torch.testing.assert_close(got, want, rtol=0, atol=0)


@pytest.mark.parametrize('root', roots())
@pytest.mark.parametrize('form', ['state_dict', 'named_parameters', 'parameters'])
def test_broadcast_parameters(root, form):
    model = make_model(seed=100 + hvd.rank())
    model(torch.randn(3, 4))  # running statistics differ by rank too
    before = copy.deepcopy(model.state_dict())
    if form == 'state_dict':
        hvd.broadcast_parameters(model.state_dict(), root_rank=root)
        tensors = list(model.state_dict().values())
    elif form == 'named_parameters':
        hvd.broadcast_parameters(model.named_parameters(), root_rank=root)
        tensors = list(model.parameters())
    else:
        hvd.broadcast_parameters(list(model.parameters()), root_rank=root)
        tensors = list(model.parameters())
    all_equal_to_root(tensors, root)
    if hvd.size() > 1:
        changed = any(not torch.equal(before[k], v) for k, v in model.state_dict().items())
        assert changed == (hvd.rank() != root)


def test_broadcast_parameters_rejects_other_types():
    with pytest.raises(ValueError):
        hvd.broadcast_parameters(42, root_rank=0)


def optimizers():
    return {
        'sgd_momentum': lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9),
        'adam': lambda ps: torch.optim.Adam(ps, lr=0.01, betas=(0.8, 0.99)),
    }


def state_tensors(opt):
    return [v for p in (p for g in opt.param_groups for p in g['params'])
            for _, v in sorted(opt.state[p].items()) if torch.is_tensor(v)]


@pytest.mark.parametrize('root', roots())
@pytest.mark.parametrize('name', sorted(optimizers()))
def test_broadcast_optimizer_state(root, name):
    model = make_model(seed=7)
    opt = optimizers()[name](model.parameters())
    # Give each rank its own state: different data, steps and learning rate.
    for step in range(hvd.rank() + 1):
        opt.zero_grad()
        x = torch.randn(5, 4, generator=torch.Generator().manual_seed(hvd.rank() * 10 + step))
        F.mse_loss(model(x), torch.zeros(5, 2)).backward()
        opt.step()
    opt.param_groups[0]['lr'] = 0.5 + hvd.rank()
    before = [t.clone() for t in state_tensors(opt)]

    hvd.broadcast_optimizer_state(opt, root_rank=root)

    root_lr = 0.5 + root
    assert opt.param_groups[0]['lr'] == root_lr
    after = state_tensors(opt)
    assert len(after) == len(before) > 0
    all_equal_to_root(after, root)
    if hvd.size() > 1 and hvd.rank() != root:
        assert any(not torch.equal(a, b) for a, b in zip(before, after))
    if name == 'adam':
        assert opt.param_groups[0]['betas'] == (0.8, 0.99)
        assert isinstance(opt.param_groups[0]['betas'], tuple)
    # The broadcast state is usable: one more step works everywhere.
    opt.zero_grad()
    F.mse_loss(model(torch.ones(2, 4)), torch.zeros(2, 2)).backward()
    opt.step()


def test_broadcast_optimizer_state_creates_missing_state():
    # As Horovod: the state of a fresh optimizer is made by one step on zero
    # gradients, which stay: trainable parameters end with a zero .grad
    # (scripts broadcast those), frozen ones keep None. The step moves the
    # parameters as it would (weight decay here), on every rank alike.
    model = make_model(seed=3)
    frozen = torch.nn.Parameter(torch.ones(3), requires_grad=False)
    before = [p.detach().clone() for p in model.parameters()]
    opt = torch.optim.SGD([{'params': model.parameters()},
                           {'params': [frozen]}], lr=0.5, weight_decay=0.1)
    assert len(opt.state) == 0
    hvd.broadcast_optimizer_state(opt, root_rank=0)
    for p, b in zip(model.parameters(), before):
        assert p.grad is not None and torch.equal(p.grad,
                                                  torch.zeros_like(p))
        assert torch.allclose(p, b * (1 - 0.5 * 0.1))
    assert frozen.grad is None
    for p in model.parameters():
        assert torch.equal(hvd.broadcast(p.grad, 0), torch.zeros_like(p))
    adam = torch.optim.Adam(model.parameters(), lr=0.01)
    hvd.broadcast_optimizer_state(adam, root_rank=0)
    assert len(adam.state) == len(list(model.parameters()))
    all_equal_to_root(state_tensors(adam), 0)


def test_broadcast_optimizer_state_of_distributed_optimizer():
    model = make_model(seed=3)
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9),
                                   named_parameters=model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(opt, root_rank=0)
    x = torch.randn(4, 4, generator=torch.Generator().manual_seed(hvd.rank()))
    F.mse_loss(model(x), torch.zeros(4, 2)).backward()
    opt.step()
    all_equal_to_root(list(model.parameters()), 0)


def test_broadcast_optimizer_state_rejects_lbfgs():
    model = make_model(seed=3)
    with pytest.raises(ValueError, match='LBFGS'):
        hvd.broadcast_optimizer_state(torch.optim.LBFGS(model.parameters()), root_rank=0)


class Point:
    def __init__(self, x, y):
        self.x, self.y = x, y

    def __eq__(self, other):
        return isinstance(other, Point) and (self.x, self.y) == (other.x, other.y)


def sample_object(r):
    return {
        'rank': r,
        'nested': [1, (2.5, 'three'), {'four': None}],
        'tensor': torch.arange(r + 3, dtype=torch.float32),
        'array': np.full((2, r + 1), r, dtype=np.int16),
        'point': Point(r, -r),
        'counter': collections.Counter('ab' * (r + 1)),
        'text': 'x' * (1000 * r + 1),
    }


def check_sample(obj, r):
    want = sample_object(r)
    assert obj['rank'] == r
    assert obj['nested'] == want['nested']
    assert torch.equal(obj['tensor'], want['tensor'])
    np.testing.assert_array_equal(obj['array'], want['array'])
    assert obj['point'] == want['point']
    assert obj['counter'] == want['counter']
    assert obj['text'] == want['text']


@pytest.mark.parametrize('root', roots())
def test_broadcast_object(root):
    obj = hvd.broadcast_object(sample_object(hvd.rank()), root_rank=root)
    check_sample(obj, root)


def test_broadcast_object_of_a_function():
    offset = 10 * hvd.rank()
    fn = hvd.broadcast_object(lambda v: v + offset, root_rank=0, name='fn')
    assert fn(1) == 1


def test_broadcast_object_default_root_and_name():
    assert hvd.broadcast_object(hvd.rank()) == 0
    assert hvd.broadcast_object('rank %d' % hvd.rank()) == 'rank 0'


def test_broadcast_object_when_only_the_root_has_one():
    # Non-root ranks pass None: the default name must not depend on the type.
    obj = hvd.broadcast_object(('host', 1234) if hvd.rank() == 0 else None)
    assert obj == ('host', 1234)


def test_allgather_object():
    gathered = hvd.allgather_object(sample_object(hvd.rank()))
    assert len(gathered) == hvd.size()
    for r, obj in enumerate(gathered):
        check_sample(obj, r)


def test_allgather_object_of_scalars_and_none():
    assert hvd.allgather_object(hvd.rank() * 2, name='ints') == [2 * r for r in range(hvd.size())]
    assert hvd.allgather_object(None, name='nones') == [None] * hvd.size()
    mixed = hvd.allgather_object(None if hvd.rank() % 2 else hvd.rank())
    assert mixed == [None if r % 2 else r for r in range(hvd.size())]
