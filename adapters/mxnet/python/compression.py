"""Gradient compression for allreduce, as in Horovod.

A compressor turns an array into the array that travels (compress) and back
(decompress); ``ctx`` carries what decompress needs.
"""

import numpy as np

from horovod.common.compression import Compressor, NoneCompressor  # noqa: F401


class FP16Compressor(Compressor):
    """Sends floating-point arrays as float16, halving the bytes on the wire."""

    @staticmethod
    def compress(tensor):
        dtype = np.dtype(tensor.dtype)
        if dtype.kind == "f" and dtype != np.float16:
            return tensor.astype(np.float16), dtype
        return tensor, None

    @staticmethod
    def decompress(tensor, ctx):
        if ctx is not None:
            return tensor.astype(ctx)
        return tensor


class Compression:
    """The compressors DistributedTrainer accepts."""

    none = NoneCompressor
    fp16 = FP16Compressor
