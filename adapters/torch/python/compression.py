"""Gradient compression for allreduce, as in Horovod.

A compressor turns a tensor into the tensor that travels (compress) and back
(decompress); ``ctx`` carries what decompress needs.
"""

import torch

from horovod.common.compression import Compressor, NoneCompressor  # noqa: F401


class FP16Compressor(Compressor):
    """Sends floating-point tensors as float16, halving the bytes on the wire."""

    @staticmethod
    def compress(tensor):
        if tensor.dtype.is_floating_point and tensor.dtype != torch.float16:
            return tensor.to(torch.float16), tensor.dtype
        return tensor, None

    @staticmethod
    def decompress(tensor, ctx):
        if ctx is not None:
            return tensor.to(ctx)
        return tensor


class Compression:
    """The compressors DistributedOptimizer and allreduce accept."""

    none = NoneCompressor
    fp16 = FP16Compressor
