"""Gradient compression for allreduce, as in Horovod: Compression.none sends
tensors as they are, Compression.fp16 sends floating-point tensors as
float16 (half the bytes) and casts the result back."""

import tensorflow as tf

from horovod.common.compression import Compressor, NoneCompressor  # noqa: F401


class FP16Compressor(Compressor):
    """Sends floating-point tensors as float16."""

    @staticmethod
    def compress(tensor):
        if tensor.dtype.is_floating and tensor.dtype != tf.float16:
            return tf.cast(tensor, tf.float16), tensor.dtype
        return tensor, None

    @staticmethod
    def decompress(tensor, ctx):
        if ctx is not None:
            return tf.cast(tensor, ctx)
        return tensor


class Compression:
    """The compressors allreduce, DistributedOptimizer and
    DistributedGradientTape accept."""

    none = NoneCompressor
    fp16 = FP16Compressor
