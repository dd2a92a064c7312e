"""DistributedOptimizer with op=Adasum, on a runtime that loads the adasum
reducer. Every rank runs the same tests in the same order."""

import copy
import os

import pytest
import torch
import torch.nn.functional as F

# Before init: this suite's runtime loads the adasum reducer.
os.environ.setdefault('HOROVOD_CONFIG',
                      os.path.join(os.path.dirname(__file__), 'configs', 'adasum.toml'))

import horovod.torch as hvd  # noqa: E402

if not hvd.is_initialized():
    hvd.init()


def adasum_offered():
    try:
        hvd.allreduce(torch.ones(2), name='adasum_probe', op=hvd.Adasum)
        return True
    except (ValueError, RuntimeError):  # every rank fails the op alike
        return False


pytestmark = pytest.mark.skipif(hvd.size() > 1 and not adasum_offered(),
                                reason='the adasum reducer does not serve this job size')


def make_model():
    torch.manual_seed(1234)
    return torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.Tanh(),
                               torch.nn.Linear(7, 3)).double()


def test_identical_gradients_give_one_local_step():
    # Adasum(g, g) = g: when every rank has the same batch, the combined
    # update is the one a single rank makes.
    model = make_model()
    reference = copy.deepcopy(model)
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.5),
                                   named_parameters=model.named_parameters(), op=hvd.Adasum)
    ref_opt = torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.5)
    gen = torch.Generator().manual_seed(3)
    for _ in range(3):
        x = torch.randn(4, 5, generator=gen, dtype=torch.float64)
        y = torch.randint(0, 3, (4,), generator=gen)
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()
        ref_opt.zero_grad()
        F.cross_entropy(reference(x), y).backward()
        ref_opt.step()
    for a, b in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(a, b)


def test_orthogonal_updates_add_up():
    # Adasum of orthogonal vectors is their sum: rank r's gradient is the
    # r-th unit vector, so every rank ends at start - lr * (sum of them).
    weight = torch.nn.Parameter(torch.zeros(hvd.size() + 1, dtype=torch.float64))
    opt = hvd.DistributedOptimizer(torch.optim.SGD([weight], lr=0.5),
                                   named_parameters=[('weight', weight)], op=hvd.Adasum)
    direction = torch.zeros_like(weight)
    direction[hvd.rank()] = 1.0
    (weight * direction).sum().backward()
    opt.step()
    expected = torch.zeros_like(weight)
    expected[:hvd.size()] = -0.5
    torch.testing.assert_close(weight.detach(), expected)


def test_skip_synchronize_is_refused():
    model = make_model()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                   named_parameters=model.named_parameters(), op=hvd.Adasum)
    if hvd.size() == 1:
        return  # one rank gets the plain DistributedOptimizer
    with pytest.raises(AssertionError, match='Adasum'):
        with opt.skip_synchronize():
            pass
