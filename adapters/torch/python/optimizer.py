"""DistributedOptimizer: a torch optimizer whose gradients are allreduced.

Each parameter's gradient accumulator gets a hook that starts the
parameter's allreduce as soon as its gradient is ready, so communication
overlaps the rest of backward; step() (or synchronize()) waits for them.
"""

import os
import warnings
from contextlib import contextmanager

import torch

from horovod.common.util import split_evenly
from horovod.torch.compression import Compression
from horovod.torch.functions import broadcast_object
from horovod.torch.mpi_ops import Adasum, Average
from horovod.torch.mpi_ops import _allreduce_each_async_
from horovod.torch.mpi_ops import allreduce_async_, grouped_allreduce_async_
from horovod.torch.mpi_ops import sparse_allreduce_async, synchronize
from horovod.torch.mpi_ops import global_process_set, rocm_built, size


def _named_parameters(param_groups, named_parameters):
    if named_parameters is not None:
        named = list(named_parameters)
    else:
        # Numbered by group and place in it: unique across groups, and the
        # same on every rank.
        named = [('allreduce.noname.%d.%d' % (i, j), v)
                 for i, group in enumerate(param_groups)
                 for j, v in enumerate(group['params'])]
    if any(not isinstance(p, tuple) for p in named):
        raise ValueError('named_parameters should be a sequence of '
                         'tuples (name, parameter), usually produced by '
                         'model.named_parameters().')
    seen, dups = set(), set()
    for name, _ in named:
        (dups if name in seen else seen).add(name)
    if dups:
        raise ValueError('Parameter names in named_parameters must be unique. '
                         'Found duplicates: %s' % ', '.join(sorted(dups)))
    all_ids = {id(v) for group in param_groups for v in group['params']}
    unnamed = all_ids - {id(v) for _, v in named}
    if unnamed:
        raise ValueError('named_parameters was specified, but one or more model '
                         'parameters were not named. Python object ids: '
                         '%s' % ', '.join(str(i) for i in unnamed))
    return named


def _check_groups(groups):
    if groups is None:
        return
    if isinstance(groups, list):
        seen = set()
        for group in groups:
            for p in group:
                if not isinstance(p, torch.Tensor):
                    raise ValueError('groups must consist of torch.Tensor.')
                if id(p) in seen:
                    raise ValueError('A parameter can only appear once in groups.')
                seen.add(id(p))
    elif not isinstance(groups, int) or groups <= 0:
        raise ValueError('groups should be a non-negative integer or '
                         'a list of list of torch.Tensor.')


def _hook_after_accumulation(p, fn):
    """Runs fn() each time p's gradient has been accumulated; returns what
    must be kept alive for the hook to stay registered."""
    if hasattr(p, 'register_post_accumulate_grad_hook'):
        return p.register_post_accumulate_grad_hook(lambda _: fn())
    grad_acc = p.expand_as(p).grad_fn.next_functions[0][0]
    grad_acc.register_hook(lambda *_: fn())
    return grad_acc


def _backward_pass_hook(optimizer, p):
    """The gradient hook of both optimizers: counts p's backward passes down
    and starts its allreduce (optimizer._start_allreduce) on the last."""
    def hook():
        if p in optimizer._handles and optimizer._handles[p][0] is not None:
            if optimizer._allreduce_delay[p] <= 0:
                raise AssertionError(
                    "Gradients were computed more than "
                    "backward_passes_per_step times before call "
                    "to step(). Increase backward_passes_per_step to "
                    "accumulate gradients locally.")
        assert not p.grad.requires_grad
        assert optimizer._allreduce_delay[p] > 0
        optimizer._allreduce_delay[p] -= 1
        if optimizer._allreduce_delay[p] == 0:
            optimizer._start_allreduce(p)
        else:
            optimizer._handles[p] = (None, None)
    return hook


class _DistributedOptimizer(torch.optim.Optimizer):
    _horovod_distributed = True

    def __init__(self, params, named_parameters, compression,
                 backward_passes_per_step=1, op=Average,
                 gradient_predivide_factor=1.0, groups=None,
                 sparse_as_dense=False, process_set=global_process_set):
        super(self.__class__, self).__init__(params)
        self._compression = compression
        named = _named_parameters(self.param_groups, named_parameters)
        self._parameter_names = {v: k for k, v in sorted(named, key=lambda kv: kv[0])}
        self.backward_passes_per_step = backward_passes_per_step
        self._allreduce_delay = {v: backward_passes_per_step for _, v in named}
        self.op = op
        self.gradient_predivide_factor = gradient_predivide_factor
        self.sparse_as_dense = sparse_as_dense
        self.process_set = process_set

        self._handles = {}
        self._grad_accs = []
        self._requires_update = set()
        self._synchronized = False
        self._should_synchronize = True
        _check_groups(groups)
        self._groups = groups
        self._p_to_group = {}
        self._group_counts = {}

        if self.process_set.included() and (
                size() > 1 or os.environ.get('HOROVOD_ELASTIC') == '1'):
            self._register_hooks()

    def load_state_dict(self, *args, **kwargs):
        self._handles = {}
        self._synchronized = False
        self._should_synchronize = True
        for p in self._allreduce_delay:
            self._allreduce_delay[p] = self.backward_passes_per_step
        super(self.__class__, self).load_state_dict(*args, **kwargs)

    @staticmethod
    def find_duplicates(lst):
        seen, dups = set(), set()
        for el in lst:
            (dups if el in seen else seen).add(el)
        return dups

    def set_backward_passes_per_step(self, passes):
        self.backward_passes_per_step = passes
        for p in self._allreduce_delay:
            self._allreduce_delay[p] = passes

    def _trainable(self):
        return [p for group in self.param_groups for p in group['params']
                if p.requires_grad]

    def _form_groups(self, p_list):
        # Every rank must build the same groups in the same order: take the
        # parameter order of the set's first rank.
        names = broadcast_object([self._parameter_names.get(p) for p in p_list],
                                 root_rank=0,
                                 name='DistributedOptimizer.groups',
                                 process_set=self.process_set)
        order = {n: i for i, n in enumerate(names)}
        p_list = sorted(p_list, key=lambda p: order[self._parameter_names.get(p)])
        if isinstance(self._groups, list):
            listed = {id(p) for p in p_list}
            p_groups, grouped = [], set()
            for group in self._groups:
                members = [p for p in group if id(p) in listed]
                if members:
                    p_groups.append(members)
                grouped.update(id(p) for p in members)
            p_groups += [[p] for p in p_list if id(p) not in grouped]
        else:
            p_groups = split_evenly(p_list, self._groups)
        for group in map(tuple, p_groups):
            for p in group:
                self._p_to_group[p] = group
            self._group_counts[group] = 0

    def _register_hooks(self):
        p_list = self._trainable()
        if self._groups is not None:
            self._form_groups(p_list)
        for p in p_list:
            self._requires_update.add(p)
            self._grad_accs.append(_hook_after_accumulation(p, self._make_hook(p)))

    def _scale_factors(self):
        if self.op == Average:
            # The runtime divides by the set's size after the sum; the
            # predivide factor moves part of that division before it.
            return 1.0 / self.gradient_predivide_factor, self.gradient_predivide_factor
        return 1.0, 1.0

    def _dense_grad(self, p):
        """p's gradient as the dense tensor its allreduce takes; None for a
        sparse one, allreduced as such."""
        if p.grad is None:
            # Another rank may have a gradient for p (a branch this rank did
            # not take); contribute zeros so the allreduce still matches.
            p.grad = torch.zeros_like(p)
        if not p.grad.is_sparse:
            return p.grad
        return p.grad.to_dense() if self.sparse_as_dense else None

    def _allreduce_grad_async(self, p):
        name = self._parameter_names.get(p)
        tensor = self._dense_grad(p)
        if tensor is None:
            handle = sparse_allreduce_async(p.grad, name=name, op=self.op,
                                            process_set=self.process_set)
            return handle, None
        compressed, ctx = self._compression.compress(tensor)
        prescale, postscale = self._scale_factors()
        handle = allreduce_async_(compressed, name=name, op=self.op,
                                  prescale_factor=prescale,
                                  postscale_factor=postscale,
                                  process_set=self.process_set)
        return handle, ctx

    def _grouped_allreduce_grad_async(self, group):
        for p in group:
            if p.grad is None:
                p.grad = torch.zeros_like(p)
        name = self._parameter_names.get(group[0])
        tensors, ctxs = [], []
        for p in group:
            grad = p.grad.to_dense() if p.grad.is_sparse else p.grad
            compressed, ctx = self._compression.compress(grad)
            tensors.append(compressed)
            ctxs.append(ctx)
        prescale, postscale = self._scale_factors()
        handle = grouped_allreduce_async_(tensors, name=name, op=self.op,
                                          prescale_factor=prescale,
                                          postscale_factor=postscale,
                                          process_set=self.process_set)
        return handle, ctxs

    _make_hook = _backward_pass_hook

    def _start_allreduce(self, p):
        if self._groups is None:
            self._handles[p] = self._allreduce_grad_async(p)
            return
        # A group starts once its last member has its gradient.
        group = self._p_to_group[p]
        self._group_counts[group] += 1
        if self._group_counts[group] < len(group):
            self._handles[p] = (None, None)
            return
        self._handles[group] = self._grouped_allreduce_grad_async(group)
        for gp in group:
            self._handles.pop(gp, None)
        self._group_counts[group] = 0

    def _start_missing(self):
        """Starts the allreduces backward did not start (parameters with no
        gradient this step, or fewer backward passes than announced)."""
        started = set()
        for key, (handle, _) in self._handles.items():
            if handle is None:
                continue
            started.update(key) if isinstance(key, tuple) else started.add(key)
        for p, (handle, _) in list(self._handles.items()):
            if handle is None:
                del self._handles[p]
        missing = sorted(self._requires_update - started,
                         key=lambda q: self._parameter_names.get(q))
        if self._groups is None:
            self._handles.update(self._allreduce_grads_async(missing))
            return
        for p in missing:
            if p in started:
                continue
            group = self._p_to_group[p]
            self._handles[group] = self._grouped_allreduce_grad_async(group)
            self._group_counts[group] = 0
            started.update(group)

    def _allreduce_grads_async(self, params):
        """_allreduce_grad_async of each of `params`, the dense gradients
        started together; {p: (handle, ctx)}."""
        entries, dense, compressed = {}, [], []
        for p in params:
            tensor = self._dense_grad(p)
            if tensor is None:
                entries[p] = self._allreduce_grad_async(p)
            else:
                dense.append(p)
                compressed.append(self._compression.compress(tensor))
        prescale, postscale = self._scale_factors()
        handles = _allreduce_each_async_(
            [c for c, _ in compressed],
            [self._parameter_names.get(p) for p in dense], self.op,
            prescale, postscale, self.process_set)
        for p, handle, (_, ctx) in zip(dense, handles, compressed):
            entries[p] = (handle, ctx)
        return entries

    def synchronize(self):
        """Waits for every gradient's allreduce and writes the results into
        the parameters' .grad."""
        if not self.process_set.included():
            self._synchronized = True
            return
        try:
            self._start_missing()
            for key, (handle, ctx) in self._handles.items():
                if isinstance(key, tuple):
                    outputs = synchronize(handle)
                    for gp, output, gctx in zip(key, outputs, ctx):
                        self._allreduce_delay[gp] = self.backward_passes_per_step
                        self._write_grad(gp, self._compression.decompress(output, gctx))
                else:
                    # A sparse allreduce's handle is a function returning the result.
                    output = handle() if callable(handle) else synchronize(handle)
                    self._allreduce_delay[key] = self.backward_passes_per_step
                    self._write_grad(key, self._compression.decompress(output, ctx))
        except Exception:
            # A failed step (a rank died) leaves nothing pending, so that an
            # elastic job restores its state and steps again.
            for p in self._allreduce_delay:
                self._allreduce_delay[p] = self.backward_passes_per_step
            raise
        finally:
            self._handles.clear()
        self._synchronized = True

    @staticmethod
    def _write_grad(p, reduced):
        if p.grad.is_sparse:
            if not reduced.is_sparse:
                reduced = reduced.to_sparse()
            # Sparse tensors have no set_(); this is the same in place.
            p.grad.zero_().add_(reduced)
        elif reduced is not p.grad:
            p.grad.set_(reduced)

    @contextmanager
    def skip_synchronize(self):
        """step() inside this context does not synchronize: use it after an
        explicit synchronize() (e.g. to clip gradients in between)."""
        self._should_synchronize = False
        try:
            yield
        finally:
            self._should_synchronize = True

    def step(self, closure=None):
        if self._should_synchronize:
            if self._synchronized:
                warnings.warn("optimizer.step() called without "
                              "optimizer.skip_synchronize() context after "
                              "optimizer.synchronize(). This can cause training "
                              "slowdown. You may want to consider using "
                              "optimizer.skip_synchronize() context if you use "
                              "optimizer.synchronize() in your code.")
            self.synchronize()
        self._synchronized = False
        return super(self.__class__, self).step(closure)

    def zero_grad(self, *args, **kwargs):
        if self._handles:
            raise AssertionError("optimizer.zero_grad() was called after loss.backward() "
                                 "but before optimizer.step() or optimizer.synchronize(). "
                                 "This is prohibited as it can cause a race condition.")
        return super(self.__class__, self).zero_grad(*args, **kwargs)


class _DistributedAdasumOptimizer(torch.optim.Optimizer):
    """Adasum combines the ranks' parameter updates, not their gradients: each
    rank steps its own optimizer on its own gradient, the resulting deltas are
    allreduced with Adasum, and every rank applies the combined delta to the
    parameters it started from."""

    _horovod_distributed = True

    def __init__(self, params, named_parameters, compression,
                 backward_passes_per_step=1, process_set=global_process_set):
        super(self.__class__, self).__init__(params)
        self._compression = compression
        named = _named_parameters(self.param_groups, named_parameters)
        self._parameter_names = {v: k for k, v in sorted(named, key=lambda kv: kv[0])}
        self.backward_passes_per_step = backward_passes_per_step
        self._allreduce_delay = {v: backward_passes_per_step for _, v in named}
        self.process_set = process_set
        self._handles = {}
        self._grad_accs = []
        self._requires_update = set()
        self._synchronized = False
        self._should_synchronize = True
        self._starting_models = {p: torch.zeros_like(p, requires_grad=False)
                                 for _, p in named}
        self._register_hooks()

    def set_backward_passes_per_step(self, passes):
        self.backward_passes_per_step = passes
        for p in self._allreduce_delay:
            self._allreduce_delay[p] = passes

    def _register_hooks(self):
        for group in self.param_groups:
            for p in group['params']:
                if p.requires_grad:
                    p.grad = torch.zeros_like(p)
                    self._requires_update.add(p)
                    self._grad_accs.append(
                        _hook_after_accumulation(p, self._make_hook(p)))

    def _allreduce_grad_async(self, p):
        # Step the wrapped optimizer on p alone, from p's current value;
        # what it moved p by is the delta to combine.
        start = self._starting_models[p]
        start.copy_(p.detach())
        stashed = [group['params'] for group in self.param_groups]
        for group in self.param_groups:
            group['params'] = [p] if any(p is v for v in group['params']) else []
        try:
            super(self.__class__, self).step()
        finally:
            for group, params in zip(self.param_groups, stashed):
                group['params'] = params
        with torch.no_grad():
            p.sub_(start)
        compressed, ctx = self._compression.compress(p.detach())
        handle = allreduce_async_(compressed, name=self._parameter_names.get(p),
                                  op=Adasum, process_set=self.process_set)
        return handle, ctx

    _make_hook = _backward_pass_hook

    def _start_allreduce(self, p):
        self._handles[p] = self._allreduce_grad_async(p)

    def synchronize(self):
        pass

    @contextmanager
    def skip_synchronize(self):
        raise AssertionError("Skipping synchronization is not supported "
                             "when using Adasum optimizer.")

    def step(self, closure=None):
        loss = closure() if closure is not None else None
        for p in sorted(self._requires_update - set(self._handles),
                        key=lambda q: self._parameter_names.get(q)):
            self._handles[p] = self._allreduce_grad_async(p)
        for p, (handle, ctx) in list(self._handles.items()):
            if handle is None:
                handle, ctx = self._allreduce_grad_async(p)
            delta = self._compression.decompress(synchronize(handle), ctx)
            start = self._starting_models[p]
            with torch.no_grad():
                start.add_(delta)
                p.copy_(start)
            self._allreduce_delay[p] = self.backward_passes_per_step
        self._handles.clear()
        return loss

    def zero_grad(self, *args, **kwargs):
        if self._handles:
            raise AssertionError("optimizer.zero_grad() was called after loss.backward() "
                                 "but before optimizer.step() or optimizer.synchronize(). "
                                 "This is prohibited as it can cause a race condition.")
        return super(self.__class__, self).zero_grad(*args, **kwargs)


def DistributedOptimizer(optimizer, named_parameters=None,
                         compression=Compression.none,
                         backward_passes_per_step=1,
                         op=Average,
                         gradient_predivide_factor=1.0,
                         num_groups=0,
                         groups=None,
                         sparse_as_dense=False,
                         process_set=global_process_set):
    """Wraps a torch.optim.Optimizer so that step() applies gradients
    allreduced over the process set.

    Allreduces start from gradient hooks during ``loss.backward()``;
    ``step()`` waits for them. ``synchronize()`` waits explicitly (for
    gradient clipping and the like): call ``step()`` inside
    ``skip_synchronize()`` afterwards.

    Arguments:
        optimizer: the optimizer that applies the averaged gradients.
        named_parameters: (name, parameter) pairs naming the allreduces,
            usually ``model.named_parameters()``.
        compression: ``Compression.none`` or ``Compression.fp16``.
        backward_passes_per_step: backward passes accumulated locally before
            each step()/synchronize().
        op: ``Average``, ``Sum`` or ``Adasum``.
        gradient_predivide_factor: with ``Average``, gradients are scaled by
            1 / factor before the sum and by factor / size after it.
        num_groups: deprecated; use ``groups``.
        groups: an int (split the parameters into that many fused groups) or
            a list of lists of parameters (each list one grouped allreduce).
        sparse_as_dense: allreduce sparse gradients as dense tensors instead
            of allgathering them.
        process_set: the ranks to average over.
    """
    if gradient_predivide_factor != 1.0:
        if rocm_built():
            raise ValueError('gradient_predivide_factor not supported yet with ROCm')
        if op != Average:
            raise ValueError('gradient_predivide_factor not supported with op != Average')
    if num_groups != 0:
        warnings.warn('Parameter `num_groups` has been replaced by `groups` '
                      'and will be removed in v0.23.0.', DeprecationWarning)
        if groups is None:
            groups = num_groups
    if op != Adasum or size() == 1:
        cls = type(optimizer.__class__.__name__, (optimizer.__class__,),
                   dict(_DistributedOptimizer.__dict__))
        wrapped = cls(optimizer.param_groups, named_parameters, compression,
                      backward_passes_per_step, op, gradient_predivide_factor,
                      groups, sparse_as_dense, process_set)
    else:
        cls = type(optimizer.__class__.__name__, (optimizer.__class__,),
                   dict(_DistributedAdasumOptimizer.__dict__))
        wrapped = cls(optimizer.param_groups, named_parameters, compression,
                      backward_passes_per_step, process_set)
    # Keep what the wrapped optimizer already had: its defaults (used by
    # add_param_group) and any state it holds (e.g. loaded from a checkpoint).
    wrapped.defaults = optimizer.defaults
    for p, state in optimizer.state.items():
        wrapped.state[p] = state
    return wrapped
