"""Shared by the horovod.mxnet suites, which run under horovodrun from the
MXNet virtual environment: every rank runs the same tests in the same
order, so collectives pair up."""

import mxnet as mx
import numpy as np

import horovod.mxnet as hvd

# Every dtype MXNet 1.9 has on the CPU (its bfloat16 cannot be made from
# Python: numpy has no such dtype).
ALL_DTYPES = [np.float16, np.float32, np.float64, np.uint8, np.int8,
              np.int32, np.int64, np.bool_]
NUMERIC_DTYPES = [d for d in ALL_DTYPES if d is not np.bool_]
FLOAT_DTYPES = [np.float16, np.float32, np.float64]


def rank_values(rank, shape, dtype, seed, low=0, high=4):
    """The numpy values rank `rank` contributes: any rank can recompute
    every rank's, so expected results are computed locally."""
    gen = np.random.default_rng(seed * 1009 + rank)
    return gen.integers(low, high, size=shape).astype(dtype)


def rank_array(rank, shape, dtype, seed, low=0, high=4):
    return mx.nd.array(rank_values(rank, shape, dtype, seed, low, high),
                       dtype=dtype)


def every_rank(shape, dtype, seed, ranks=None, **kw):
    ranks = range(hvd.size()) if ranks is None else ranks
    return [rank_values(r, shape, dtype, seed, **kw) for r in ranks]


def close(got, want, dtype):
    got = got.asnumpy() if isinstance(got, mx.nd.NDArray) else got
    if np.dtype(got.dtype) != np.dtype(dtype):
        return False
    if np.dtype(dtype) == np.float16:
        return np.allclose(got.astype(np.float64), want, rtol=1e-2, atol=1e-2)
    if np.dtype(dtype).kind == "f":
        return np.allclose(got.astype(np.float64), want, rtol=1e-6, atol=1e-6)
    return np.array_equal(got, np.asarray(want).astype(dtype))
