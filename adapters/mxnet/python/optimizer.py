"""DistributedOptimizer (an mx.optimizer.Optimizer) and DistributedTrainer
(a gluon.Trainer): gradients summed over the ranks by allreduce before each
update, the averaging folded into the optimizer's gradient rescaling.

gradient_predivide_factor f splits the averaging: gradients are scaled by
1/f before the sum and by f/size after it (in rescale_grad)."""

import warnings
from collections import OrderedDict, defaultdict

import mxnet as mx

from horovod.common.util import split_evenly
from horovod.mxnet.compression import Compression
from horovod.mxnet.mpi_ops import Sum, allreduce_, grouped_allreduce_, size


def _check_groups(num_groups):
    if not isinstance(num_groups, int) or num_groups < 0:
        raise ValueError(f"num_groups must be an int >= 0, not {num_groups!r}")


class DistributedOptimizer(mx.optimizer.Optimizer):
    """Wraps an optimizer: update() first sums the gradients over every rank.
    The wrapped optimizer's rescale_grad is scaled by
    gradient_predivide_factor / size(). num_groups > 0 reduces the
    gradients of one aggregated update in that many grouped allreduces."""

    def __init__(self, optimizer, gradient_predivide_factor=1.0,
                 num_groups=0):
        _check_groups(num_groups)
        # No Optimizer.__init__: every attribute not set here is the wrapped
        # optimizer's (__getattr__).
        self._optimizer = optimizer
        self._optimizer.rescale_grad *= gradient_predivide_factor / size()
        self._gradient_predivide_factor = gradient_predivide_factor
        self._num_groups = num_groups

    def __getattr__(self, item):
        if item == "_optimizer":  # not yet set (unpickling, copy)
            raise AttributeError(item)
        return getattr(self._optimizer, item)

    def create_state(self, index, weight):
        return self._optimizer.create_state(index, weight)

    def create_state_multi_precision(self, index, weight):
        return self._optimizer.create_state_multi_precision(index, weight)

    def _do_allreduce(self, index, grad):
        if size() == 1:
            return
        prescale = 1.0 / self._gradient_predivide_factor
        if not isinstance(index, (tuple, list)):
            allreduce_(grad, op=Sum, name=str(index),
                       prescale_factor=prescale)
            return
        if self._num_groups > 0:
            for grads, indices in zip(split_evenly(grad, self._num_groups),
                                      split_evenly(index, self._num_groups)):
                grouped_allreduce_(grads, op=Sum,
                                   name=f"{indices[0]}:{indices[-1]}",
                                   prescale_factor=prescale)
        else:
            for i, g in zip(index, grad):
                allreduce_(g, op=Sum, name=str(i),
                           prescale_factor=prescale)

    def update(self, index, weight, grad, state):
        self._do_allreduce(index, grad)
        self._optimizer.update(index, weight, grad, state)

    def update_multi_precision(self, index, weight, grad, state):
        self._do_allreduce(index, grad)
        self._optimizer.update_multi_precision(index, weight, grad, state)

    def set_learning_rate(self, lr):
        self._optimizer.set_learning_rate(lr)

    def set_lr_mult(self, args_lr_mult):
        self._optimizer.set_lr_mult(args_lr_mult)

    def set_wd_mult(self, args_wd_mult):
        self._optimizer.set_wd_mult(args_wd_mult)


class DistributedTrainer(mx.gluon.Trainer):
    """A gluon.Trainer whose step() sums the gradients over every rank by
    allreduce (instead of a kvstore) and averages them through the
    optimizer's rescaling.

    compression: Compression.none or Compression.fp16 for the allreduce.
    prefix: prepended to the allreduce names; trainers used together need
    different prefixes. num_groups > 0: the gradients go in that many
    grouped allreduces (one per dtype within a group) instead of one each.
    """

    def __init__(self, params, optimizer, optimizer_params=None,
                 compression=Compression.none, gradient_predivide_factor=1.0,
                 prefix=None, num_groups=0):
        _check_groups(num_groups)
        if prefix is not None and not isinstance(prefix, str):
            raise ValueError(f"prefix must be a string, not "
                             f"{type(prefix).__name__}")
        self._compression = compression
        if isinstance(optimizer, DistributedOptimizer):
            optimizer = optimizer._optimizer
            warnings.warn("DistributedTrainer does not take "
                          "DistributedOptimizer as its optimizer. We have "
                          "unwrapped it for you.")
        # The same parameter order on every rank.
        if isinstance(params, dict):
            params = OrderedDict(params)
        elif isinstance(params, (list, tuple)):
            params = sorted(params, key=lambda p: p.name)
        super().__init__(params, optimizer, optimizer_params=optimizer_params,
                         kvstore=None)
        # Trainer.step sets rescale_grad = _scale / batch_size.
        self._scale *= gradient_predivide_factor / size()
        self._gradient_predivide_factor = gradient_predivide_factor
        self._prefix = prefix or ""
        self._num_groups = num_groups

    def _allreduce_grads(self):
        if size() == 1:
            return
        prescale = 1.0 / self._gradient_predivide_factor
        entries = []  # (param, name, compressed gradient, ctx)
        for i, param in enumerate(self._params):
            if param.grad_req != "null":
                compressed, ctx = self._compression.compress(
                    param.list_grad()[0])
                entries.append((param, self._prefix + str(i), compressed,
                                ctx))
        if self._num_groups > 0:
            for group in split_evenly(entries, self._num_groups):
                by_dtype = defaultdict(list)
                for entry in group:
                    by_dtype[entry[2].dtype].append(entry)
                for same in by_dtype.values():
                    grouped_allreduce_([e[2] for e in same], op=Sum,
                                       name=f"{same[0][1]}:{same[-1][1]}",
                                       prescale_factor=prescale)
        else:
            for _, name, compressed, _ in entries:
                allreduce_(compressed, op=Sum, name=name,
                           prescale_factor=prescale)
        for param, _, compressed, ctx in entries:
            grad = param.list_grad()[0]
            reduced = self._compression.decompress(compressed, ctx)
            if reduced is not grad:
                grad[:] = reduced
            # Every device's copy gets the sum.
            for other in param.list_grad()[1:]:
                other[:] = grad
