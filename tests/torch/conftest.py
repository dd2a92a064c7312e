"""Shared by the horovod.torch suites, which run under horovodrun: every
rank runs the same tests in the same order, so collectives pair up."""

import os

import torch

import horovod.torch as hvd

# The suites also run against a second torch release (tests/torch/
# CMakeLists.txt): make sure that is the torch imported.
_expected = os.environ.get("HOROVOD_TEST_TORCH_VERSION")
if _expected and torch.__version__ != _expected:
    raise RuntimeError(f"expected torch {_expected}, imported "
                       f"{torch.__version__} from {torch.__file__}")

# Every dtype torch has on the CPU that Horovod carries.
ALL_DTYPES = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
              torch.float16, torch.bfloat16, torch.float32, torch.float64,
              torch.bool]
NUMERIC_DTYPES = [d for d in ALL_DTYPES if d != torch.bool]
FLOAT_DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64]


def rank_tensor(rank, shape, dtype, seed, low=0, high=4):
    """The tensor rank `rank` contributes: any rank can recompute every
    rank's, so expected results are computed locally."""
    gen = torch.Generator().manual_seed(seed * 1009 + rank)
    t = torch.randint(low, high, shape, generator=gen)
    return t.to(dtype)


def every_rank(shape, dtype, seed, ranks=None, **kw):
    ranks = range(hvd.size()) if ranks is None else ranks
    return [rank_tensor(r, shape, dtype, seed, **kw) for r in ranks]
