"""Batch normalization whose statistics span the batches of all ranks."""

import torch
import torch.nn.functional as F
from torch.nn.modules.batchnorm import _BatchNorm

from horovod.torch.mpi_ops import Sum, allgather, allreduce, global_process_set


class SyncBatchNorm(_BatchNorm):
    """Applies batch normalization over the union of every rank's batch.

    In training, the mean and variance of each channel are those of the
    batches of all ranks of ``process_set`` together (the batches may differ
    in size), and backward reduces the terms of the input gradient across
    them, so a model trained on N ranks with batch B behaves as one trained
    on one rank with batch N * B. Weight and bias gradients stay local, as
    for any other parameter (DistributedOptimizer averages them). In eval
    mode with running statistics it is plain BatchNorm.

    Arguments are those of ``torch.nn.BatchNorm*d``; inputs are (N, C, ...).
    """

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, process_set=global_process_set):
        super().__init__(num_features, eps, momentum, affine, track_running_stats)
        self.process_set = process_set

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise ValueError('expected at least 2D input (got {}D input)'.format(input.dim()))

    def _averaging_factor(self):
        if not (self.training and self.track_running_stats):
            return 0.0
        if self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
        if self.momentum is None:
            return 1.0 / float(self.num_batches_tracked)
        return self.momentum

    def forward(self, input):
        self._check_input_dim(input)
        factor = self._averaging_factor()
        use_batch_stats = self.training or not self.track_running_stats
        if not use_batch_stats:
            return F.batch_norm(input, self.running_mean, self.running_var,
                                self.weight, self.bias, False, 0.0, self.eps)
        return _SyncBatchNorm.apply(input, self.weight, self.bias,
                                    self.running_mean, self.running_var,
                                    self.eps, factor, self.process_set)


def _channels_first(x):
    """(N, C, ...) -> (C, N * ...) view-or-copy."""
    return x.transpose(0, 1).reshape(x.shape[1], -1)


def _stats_dtype(dtype):
    return torch.float64 if dtype == torch.float64 else torch.float32


class _SyncBatchNorm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input, weight, bias, running_mean, running_var, eps,
                momentum, process_set):
        channels = input.shape[1]
        dtype = _stats_dtype(input.dtype)
        x = _channels_first(input).to(dtype)
        count = x.shape[1]
        if count > 0:
            local_mean = x.mean(dim=1)
            local_m2 = ((x - local_mean[:, None]) ** 2).sum(dim=1)
        else:
            local_mean = x.new_zeros(channels)
            local_m2 = x.new_zeros(channels)

        # One allgather of (count, mean, M2) per rank; combining them as
        # Chan et al. do keeps the variance exact where sum-of-squares
        # formulas lose digits.
        local = torch.cat([x.new_tensor([float(count)]), local_mean, local_m2])
        gathered = allgather(local.to(torch.float64).unsqueeze(0),
                             name='sync_batch_norm.stats', process_set=process_set)
        counts = gathered[:, 0]
        means = gathered[:, 1:channels + 1]
        m2s = gathered[:, channels + 1:]
        total = counts.sum()
        if total.item() == 0:
            raise ValueError('SyncBatchNorm: every rank of the process set has an empty batch')
        mean = (counts[:, None] * means).sum(dim=0) / total
        m2 = (m2s + counts[:, None] * (means - mean) ** 2).sum(dim=0)
        var = m2 / total
        invstd = torch.rsqrt(var + eps)

        if running_mean is not None and momentum > 0:
            running_mean.mul_(1 - momentum).add_(mean.to(running_mean.dtype), alpha=momentum)
        if running_var is not None and momentum > 0:
            unbiased = m2 / (total - 1) if total.item() > 1 else var
            running_var.mul_(1 - momentum).add_(unbiased.to(running_var.dtype), alpha=momentum)

        mean = mean.to(dtype)
        invstd = invstd.to(dtype)
        shape = [1, channels] + [1] * (input.dim() - 2)
        out = (input.to(dtype) - mean.view(shape)) * invstd.view(shape)
        if weight is not None:
            out = out * weight.to(dtype).view(shape)
        if bias is not None:
            out = out + bias.to(dtype).view(shape)

        ctx.save_for_backward(input, weight, mean, invstd)
        ctx.total = float(total.item())
        ctx.process_set = process_set
        ctx.has_bias = bias is not None
        return out.to(input.dtype)

    @staticmethod
    def backward(ctx, grad_output):
        input, weight, mean, invstd = ctx.saved_tensors
        dtype = mean.dtype
        channels = input.shape[1]
        shape = [1, channels] + [1] * (input.dim() - 2)
        dims = [0] + list(range(2, input.dim()))

        dy = grad_output.to(dtype)
        xhat = (input.to(dtype) - mean.view(shape)) * invstd.view(shape)
        sum_dy = dy.sum(dim=dims)
        sum_dy_xhat = (dy * xhat).sum(dim=dims)

        grad_input = grad_weight = grad_bias = None
        if ctx.needs_input_grad[0]:
            sums = allreduce(torch.cat([sum_dy, sum_dy_xhat]), op=Sum,
                             name='sync_batch_norm.grad_sums',
                             process_set=ctx.process_set)
            mean_dy = (sums[:channels] / ctx.total).view(shape)
            mean_dy_xhat = (sums[channels:] / ctx.total).view(shape)
            scale = invstd if weight is None else invstd * weight.to(dtype)
            grad_input = (scale.view(shape) * (dy - mean_dy - xhat * mean_dy_xhat)).to(input.dtype)
        if weight is not None and ctx.needs_input_grad[1]:
            grad_weight = sum_dy_xhat.to(weight.dtype)
        if ctx.has_bias and ctx.needs_input_grad[2]:
            grad_bias = sum_dy.to(weight.dtype if weight is not None else dtype)
        return grad_input, grad_weight, grad_bias, None, None, None, None, None
