"""DistributedOptimizer: N ranks on slices of a batch step as one rank on the
whole batch. Every rank runs the same tests in the same order."""

import copy

import pytest
import torch
import torch.nn.functional as F

import horovod.torch as hvd


if not hvd.is_initialized():
    hvd.init()


def multi_rank():
    return pytest.mark.skipif(hvd.size() < 2, reason='needs 2 or more ranks')


def make_model(dtype=torch.float64):
    torch.manual_seed(1234)
    return torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.Tanh(),
                               torch.nn.Linear(7, 3)).to(dtype)


def global_batch(rows_per_rank, seed, dtype=torch.float64):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(hvd.size() * rows_per_rank, 5, generator=gen, dtype=dtype)
    y = torch.randint(0, 3, (hvd.size() * rows_per_rank,), generator=gen)
    return x, y


def my_rows(t, rows_per_rank):
    return t[hvd.rank() * rows_per_rank:(hvd.rank() + 1) * rows_per_rank]


def loss_fn(model, x, y):
    return F.cross_entropy(model(x), y)


OPTIMIZERS = {
    'sgd': lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9),
    'adam': lambda ps: torch.optim.Adam(ps, lr=0.01),
}


def assert_same_params(a, b, **tol):
    for (name, pa), pb in zip(a.named_parameters(), b.parameters()):
        torch.testing.assert_close(pa, pb, msg=lambda m: '%s: %s' % (name, m), **tol)


def run_steps(opt_name, steps=3, rows=4, dtype=torch.float64, loss_scale=1.0,
              tol=None, **kwargs):
    """Trains a distributed model on this rank's rows and a reference model
    on all rows; returns both."""
    model = make_model(dtype)
    reference = copy.deepcopy(model)
    opt = hvd.DistributedOptimizer(OPTIMIZERS[opt_name](model.parameters()),
                                   named_parameters=model.named_parameters(), **kwargs)
    ref_opt = OPTIMIZERS[opt_name](reference.parameters())
    for step in range(steps):
        x, y = global_batch(rows, seed=step, dtype=dtype)
        opt.zero_grad()
        loss_fn(model, my_rows(x, rows), my_rows(y, rows)).backward()
        opt.step()
        ref_opt.zero_grad()
        (loss_scale * loss_fn(reference, x, y)).backward()
        ref_opt.step()
    assert_same_params(model, reference, **(tol or {}))
    return model, reference


@pytest.mark.parametrize('opt_name', sorted(OPTIMIZERS))
def test_step_equals_one_rank_on_concatenated_batch(opt_name):
    run_steps(opt_name)


def test_sum_equals_size_times_mean_loss():
    run_steps('sgd', op=hvd.Sum, loss_scale=float(hvd.size()))


def test_gradient_predivide_factor():
    run_steps('sgd', gradient_predivide_factor=2.0)


def test_fp16_compression():
    run_steps('sgd', dtype=torch.float32, compression=hvd.Compression.fp16,
              tol=dict(rtol=1e-2, atol=1e-3))


@pytest.mark.parametrize('groups', [1, 2])
def test_grouped_allreduce(groups):
    run_steps('sgd', groups=groups)


def test_explicit_group_lists():
    model = make_model()
    reference = copy.deepcopy(model)
    params = list(model.parameters())
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                   named_parameters=model.named_parameters(),
                                   groups=[[params[0], params[3]], [params[1]]])
    ref_opt = torch.optim.SGD(reference.parameters(), lr=0.1)
    for step in range(2):
        x, y = global_batch(4, seed=step)
        opt.zero_grad()
        loss_fn(model, my_rows(x, 4), my_rows(y, 4)).backward()
        opt.step()
        ref_opt.zero_grad()
        loss_fn(reference, x, y).backward()
        ref_opt.step()
    assert_same_params(model, reference)


def test_num_groups_is_deprecated():
    model = make_model()
    with pytest.warns(DeprecationWarning):
        opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                       named_parameters=model.named_parameters(),
                                       num_groups=1)
    x, y = global_batch(2, seed=0)
    loss_fn(model, my_rows(x, 2), my_rows(y, 2)).backward()
    opt.step()


@pytest.mark.parametrize('passes', [2, 3])
def test_backward_passes_per_step(passes):
    model = make_model()
    reference = copy.deepcopy(model)
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                   named_parameters=model.named_parameters(),
                                   backward_passes_per_step=passes)
    ref_opt = torch.optim.SGD(reference.parameters(), lr=0.1)
    for step in range(2):
        opt.zero_grad()
        ref_opt.zero_grad()
        for micro in range(passes):
            x, y = global_batch(3, seed=10 * step + micro)
            loss_fn(model, my_rows(x, 3), my_rows(y, 3)).backward()
            loss_fn(reference, x, y).backward()
        opt.step()
        ref_opt.step()
    assert_same_params(model, reference)


@multi_rank()
def test_too_many_backward_passes_raises():
    model = make_model()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                   named_parameters=model.named_parameters())
    x, y = global_batch(2, seed=0)
    loss_fn(model, my_rows(x, 2), my_rows(y, 2)).backward()
    with pytest.raises(AssertionError, match='backward_passes_per_step'):
        loss_fn(model, my_rows(x, 2), my_rows(y, 2)).backward()
    opt.synchronize()


@multi_rank()
def test_zero_grad_between_backward_and_step_raises():
    model = make_model()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                   named_parameters=model.named_parameters())
    x, y = global_batch(2, seed=0)
    loss_fn(model, my_rows(x, 2), my_rows(y, 2)).backward()
    with pytest.raises(AssertionError, match='zero_grad'):
        opt.zero_grad()
    opt.step()
    opt.zero_grad()


def test_synchronize_clip_then_skip_synchronize():
    model = make_model()
    reference = copy.deepcopy(model)
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.5),
                                   named_parameters=model.named_parameters())
    ref_opt = torch.optim.SGD(reference.parameters(), lr=0.5)
    x, y = global_batch(4, seed=3)
    loss_fn(model, my_rows(x, 4), my_rows(y, 4)).backward()
    opt.synchronize()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 0.05)
    with opt.skip_synchronize():
        opt.step()
    loss_fn(reference, x, y).backward()
    torch.nn.utils.clip_grad_norm_(reference.parameters(), 0.05)
    ref_opt.step()
    assert_same_params(model, reference)


def test_step_after_synchronize_warns():
    model = make_model()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                   named_parameters=model.named_parameters())
    x, y = global_batch(2, seed=0)
    loss_fn(model, my_rows(x, 2), my_rows(y, 2)).backward()
    opt.synchronize()
    with pytest.warns(UserWarning, match='skip_synchronize'):
        opt.step()


@multi_rank()
def test_parameter_unused_on_some_ranks_gets_average_with_zeros():
    torch.manual_seed(7)
    heads = torch.nn.ModuleList([torch.nn.Linear(3, 1, bias=False).double()
                                 for _ in range(2)])
    opt = hvd.DistributedOptimizer(torch.optim.SGD(heads.parameters(), lr=1.0),
                                   named_parameters=heads.named_parameters())
    x = torch.ones(1, 3, dtype=torch.float64)
    # Rank 0 uses head 0 only, every other rank head 1 only.
    used = 0 if hvd.rank() == 0 else 1
    heads[used](x).sum().backward()
    opt.synchronize()
    expected0 = torch.ones(1, 3, dtype=torch.float64) / hvd.size()
    expected1 = expected0 * (hvd.size() - 1)
    torch.testing.assert_close(heads[0].weight.grad, expected0)
    torch.testing.assert_close(heads[1].weight.grad, expected1)
    with opt.skip_synchronize():
        opt.step()


@pytest.mark.parametrize('sparse_as_dense', [False, True])
def test_sparse_gradients(sparse_as_dense):
    torch.manual_seed(5)
    model = torch.nn.Embedding(10, 4, sparse=True).double()
    reference = copy.deepcopy(model)
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.5),
                                   named_parameters=model.named_parameters(),
                                   sparse_as_dense=sparse_as_dense)
    ref_opt = torch.optim.SGD(reference.parameters(), lr=0.5)
    gen = torch.Generator().manual_seed(11)
    ids = torch.randint(0, 10, (hvd.size() * 3,), generator=gen)
    target = torch.randn(hvd.size() * 3, 4, generator=gen, dtype=torch.float64)
    mine = slice(hvd.rank() * 3, (hvd.rank() + 1) * 3)
    F.mse_loss(model(ids[mine]), target[mine]).backward()
    opt.step()
    F.mse_loss(reference(ids), target).backward()
    ref_opt.step()
    torch.testing.assert_close(model.weight, reference.weight)


def test_state_dict_round_trip_resets_pending_work():
    model = make_model()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9),
                                   named_parameters=model.named_parameters())
    x, y = global_batch(2, seed=0)
    loss_fn(model, my_rows(x, 2), my_rows(y, 2)).backward()
    opt.step()
    state = opt.state_dict()
    assert len(state['state']) == 4
    opt.load_state_dict(state)
    opt.zero_grad()
    loss_fn(model, my_rows(x, 2), my_rows(y, 2)).backward()
    opt.step()


def test_keeps_class_name_and_defaults():
    model = make_model()
    base = torch.optim.Adam(model.parameters(), lr=0.003)
    opt = hvd.DistributedOptimizer(base, named_parameters=model.named_parameters())
    assert type(opt).__name__ == 'Adam'
    assert isinstance(opt, torch.optim.Adam)
    assert opt.defaults['lr'] == 0.003
    assert opt.param_groups[0]['lr'] == 0.003


def test_named_parameters_must_be_unique_tuples_covering_all():
    model = make_model()
    params = list(model.named_parameters())
    with pytest.raises(ValueError, match='unique'):
        hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                 named_parameters=[('w', params[0][1]), ('w', params[1][1])])
    with pytest.raises(ValueError, match='not named'):
        hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                 named_parameters=params[:2])
    with pytest.raises(ValueError, match='tuples'):
        hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                 named_parameters=[p for _, p in params])


def test_predivide_factor_needs_average():
    model = make_model()
    with pytest.raises(ValueError, match='op != Average'):
        hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                 op=hvd.Sum, gradient_predivide_factor=2.0)


def test_bad_groups_rejected():
    model = make_model()
    p = next(model.parameters())
    with pytest.raises(ValueError, match='only appear once'):
        hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                 named_parameters=model.named_parameters(),
                                 groups=[[p], [p]])
    with pytest.raises(ValueError, match='groups should be'):
        hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                 named_parameters=model.named_parameters(),
                                 groups=-1)
