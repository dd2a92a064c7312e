"""Broadcast of model and optimizer state, and collectives on Python objects."""

import torch

from horovod.common import objects as _objects
from horovod.torch.mpi_ops import allgather, broadcast_, broadcast_async_
from horovod.torch.mpi_ops import global_process_set
from horovod.torch.mpi_ops import rank, synchronize


def _as_named_list(params):
    if isinstance(params, dict):
        return sorted(params.items())
    try:
        items = list(params)
    except TypeError:
        raise ValueError('invalid params of type: %s' % type(params)) from None
    return [p if isinstance(p, tuple) else (None, p) for p in items]


def _broadcast_in_place_async(tensor, root_rank, name, process_set):
    """Starts an in-place broadcast of any tensor; returns (handle, finish)."""
    target = tensor.detach()
    staging = target if target.is_contiguous() else target.contiguous()
    flat = staging.view(-1) if staging.dim() == 0 else staging
    handle = broadcast_async_(flat, root_rank, name, process_set=process_set)
    if staging is target:
        return handle, None
    return handle, lambda: target.copy_(staging)


def broadcast_parameters(params, root_rank, prefix=None,
                         process_set=global_process_set):
    """Broadcasts tensors from root_rank to every rank, in place.

    params: a dict (``model.state_dict()``) or an iterable of tensors or of
    (name, tensor) pairs (``model.parameters()``, ``model.named_parameters()``).
    prefix: prepended to each name, to keep the names of two calls apart.
    """
    handles = []
    for name, p in _as_named_list(params):
        if name is not None and prefix is not None:
            name = prefix + name
        handles.append(_broadcast_in_place_async(p, root_rank, name, process_set))
    for handle, finish in handles:
        synchronize(handle)
        if finish is not None:
            finish()


def _base_step(optimizer):
    """step() of the wrapped torch optimizer, without any allreduce."""
    if getattr(optimizer, '_horovod_distributed', False):
        return super(type(optimizer), optimizer).step()
    return optimizer.step()


def _initialize_state(optimizer):
    """Creates the lazily built state (momentum buffers, Adam moments) as
    Horovod does, by one step of the wrapped optimizer on zero gradients:
    every trainable parameter is left with a zero .grad (a sparse one for
    SparseAdam), the others keep theirs, and the step moves the parameters
    as it would (weight decay, for one)."""
    for group in optimizer.param_groups:
        for p in group['params']:
            if p.requires_grad:
                p.grad = torch.zeros_like(p)
                if isinstance(optimizer, torch.optim.SparseAdam):
                    p.grad = p.grad.to_sparse()
    _base_step(optimizer)


def broadcast_optimizer_state(optimizer, root_rank, prefix='Parameter.',
                              process_set=global_process_set):
    """Broadcasts an optimizer's state and hyper-parameters from root_rank.

    Tensors of the per-parameter state (momentum buffers, moments, step
    counters) are broadcast in place; every other value (learning rates,
    betas, flags, Python numbers in the state) travels in one pickled object.
    """
    if isinstance(optimizer, torch.optim.LBFGS):
        raise ValueError('cannot broadcast torch.optim.LBFGS state')

    if len(optimizer.state) == 0:
        _initialize_state(optimizer)

    tensors = []
    options = []
    scalar_state = []
    for gi, group in enumerate(optimizer.param_groups):
        options.append({k: v for k, v in group.items() if k != 'params'})
        for pi, p in enumerate(group['params']):
            for key, value in sorted(optimizer.state.get(p, {}).items()):
                name = '%soptimizer.%d.%d.%s' % (prefix or '', gi, pi, key)
                if torch.is_tensor(value):
                    tensors.append((name, value))
                else:
                    scalar_state.append(((gi, pi, key), value))

    broadcast_parameters(tensors, root_rank, process_set=process_set)

    options, scalar_state = broadcast_object(
        (options, scalar_state), root_rank,
        name='%soptimizer.options' % (prefix or ''), process_set=process_set)
    for group, group_options in zip(optimizer.param_groups, options):
        group.update(group_options)
    for (gi, pi, key), value in scalar_state:
        p = optimizer.param_groups[gi]['params'][pi]
        optimizer.state[p][key] = value


def _serialize(obj):
    return torch.frombuffer(bytearray(_objects.serialize(obj)), dtype=torch.uint8)


def _deserialize(tensor):
    return _objects.deserialize(tensor.numpy().tobytes())


def broadcast_object(obj, root_rank=0, name=None, process_set=global_process_set):
    """Pickles obj on root_rank and returns the root's object on every rank.

    root_rank is a global rank, a member of the process set, as for
    broadcast(). name, if given, must be the same on every rank. (Horovod
    names the op after the object's type, which hangs when only the root
    passes a real object; the default here is one fixed name, safe as the
    call is synchronous.)
    """
    if name is None:
        name = 'broadcast_object'
    is_root = rank() == root_rank
    if is_root:
        payload = _serialize(obj)
        length = torch.tensor([payload.numel()], dtype=torch.int64)
    else:
        length = torch.zeros(1, dtype=torch.int64)
    broadcast_(length, root_rank, name + '.sz', process_set=process_set)
    if not is_root:
        payload = torch.empty(int(length.item()), dtype=torch.uint8)
    broadcast_(payload, root_rank, name + '.t', process_set=process_set)
    if is_root:
        return obj
    return _deserialize(payload)


def allgather_object(obj, name=None, process_set=global_process_set):
    """Pickles obj on every rank of the set; returns the list of all ranks'
    objects, in rank order. name, if given, must be the same on every rank
    (by default one fixed name, whatever the objects' types)."""
    if name is None:
        name = 'allgather_object'
    payload = _serialize(obj)
    length = torch.tensor([payload.numel()], dtype=torch.int64)
    lengths = allgather(length, name=name + '.sz', process_set=process_set)
    gathered = allgather(payload, name=name + '.t', process_set=process_set)
    return _objects.split_gathered(gathered.numpy().tobytes(), lengths.tolist())
