"""Gradient compression for allreduce, as in Horovod: the interface and the
identity compressor every binding shares. Each binding adds its own fp16
compressor (a cast in its framework).

A compressor turns a tensor into the tensor that travels (compress) and back
(decompress); ``ctx`` carries what decompress needs.
"""


class Compressor:
    """Interface: compress(tensor) -> (tensor, ctx); decompress(tensor, ctx)."""

    @staticmethod
    def compress(tensor):
        raise NotImplementedError

    @staticmethod
    def decompress(tensor, ctx):
        raise NotImplementedError


class NoneCompressor(Compressor):
    """Sends tensors as they are."""

    @staticmethod
    def compress(tensor):
        return tensor, None

    @staticmethod
    def decompress(tensor, ctx):
        return tensor
