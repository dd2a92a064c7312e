"""prescale_factor / postscale_factor bit for bit as Horovod 0.28 on the CPU,
every dtype, allreduce, grouped allreduce, reducescatter and grouped
reducescatter, compared with torch.equal (threshold zero). As in Horovod's
own tests every rank reduces the same tensor, so the sum's order cannot
matter and any difference is the scaling's. Run under horovodrun -np 2 and
-np 3."""

import pytest
import torch

import horovod.torch as hvd
from conftest import NUMERIC_DTYPES

hvd.init()
RANK, SIZE = hvd.rank(), hvd.size()

INTEGER_DTYPES = [torch.uint8, torch.int8, torch.int16, torch.int32,
                  torch.int64]
# A factor like np.random.uniform() in Horovod's tests; a negative one, which
# wraps on unsigned integers; one above 1.
FACTORS = [0.4372539710392877, -0.7, 2.3]


def horovod_scale(t, factor):
    """What Horovod's CPU scaling gives: float32 times the factor as a
    float32, float64 in double, 16-bit floats in float32, integers in
    double then cast back as torch casts (through int64, so wrapping)."""
    if t.dtype == torch.float64:
        return t * factor
    if t.dtype == torch.float32:
        return t * torch.tensor(factor, dtype=torch.float32)
    if t.dtype in (torch.float16, torch.bfloat16):
        return (t.float() * torch.tensor(factor, dtype=torch.float32)).to(
            t.dtype)
    return (t.double() * factor).to(torch.int64).to(t.dtype)


def sample(dtype, shape, seed):
    """The same tensor on every rank: floats with fractions (so rounding
    shows), integers across the type's range of small values."""
    gen = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        return (torch.rand(shape, generator=gen, dtype=torch.float64) * 200 -
                100).to(dtype)
    low = 0 if dtype == torch.uint8 else -100
    return torch.randint(low, 100, shape, generator=gen).to(dtype)


def expected(t, op, pre, post):
    """Horovod's result: prescale each rank's tensor, sum in the dtype,
    postscale by post (divided by the size for Average)."""
    scaled = horovod_scale(t, pre)
    total = scaled
    for _ in range(SIZE - 1):
        total = total + scaled
    if op == hvd.Average:
        post = post / SIZE
    return horovod_scale(total, post) if post != 1.0 else total


def rows_of(rank, rows):
    base, extra = divmod(rows, SIZE)
    return base + (1 if rank < extra else 0)


def my_rows(t):
    start = sum(rows_of(r, t.shape[0]) for r in range(RANK))
    return t[start:start + rows_of(RANK, t.shape[0])]


def cases():
    for op in (hvd.Sum, hvd.Average):
        for pre, post in ((FACTORS[0], 1.0), (1.0, FACTORS[1]),
                          (FACTORS[2], FACTORS[0]), (FACTORS[1], 1.0)):
            yield op, pre, post


@pytest.mark.parametrize("dtype", NUMERIC_DTYPES, ids=str)
def test_allreduce_scaling(dtype):
    for i, (op, pre, post) in enumerate(cases()):
        t = sample(dtype, (17, 5), seed=i)
        out = hvd.allreduce(t, op=op, prescale_factor=pre,
                            postscale_factor=post)
        assert torch.equal(out, expected(t, op, pre, post)), (op, pre, post)
        inplace = t.clone()
        hvd.allreduce_(inplace, op=op, prescale_factor=pre,
                       postscale_factor=post)
        assert torch.equal(inplace, out)


@pytest.mark.parametrize("dtype", NUMERIC_DTYPES, ids=str)
def test_grouped_allreduce_scaling(dtype):
    for i, (op, pre, post) in enumerate(cases()):
        ts = [sample(dtype, (7,), seed=i), sample(dtype, (3, 4), seed=i + 50)]
        outs = hvd.grouped_allreduce(ts, op=op, prescale_factor=pre,
                                     postscale_factor=post)
        for t, out in zip(ts, outs):
            assert torch.equal(out, expected(t, op, pre, post)), \
                (op, pre, post)


@pytest.mark.parametrize("dtype", NUMERIC_DTYPES, ids=str)
def test_reducescatter_scaling(dtype):
    for i, (op, pre, post) in enumerate(cases()):
        t = sample(dtype, (SIZE * 3 + 1, 4), seed=i)
        out = hvd.reducescatter(t, op=op, prescale_factor=pre,
                                postscale_factor=post)
        assert torch.equal(out, my_rows(expected(t, op, pre, post))), \
            (op, pre, post)


@pytest.mark.parametrize("dtype", NUMERIC_DTYPES, ids=str)
def test_grouped_reducescatter_scaling(dtype):
    for i, (op, pre, post) in enumerate(cases()):
        ts = [sample(dtype, (SIZE * 2, 3), seed=i),
              sample(dtype, (SIZE + 1,), seed=i + 50)]
        outs = hvd.grouped_reducescatter(ts, op=op, prescale_factor=pre,
                                         postscale_factor=post)
        for t, out in zip(ts, outs):
            assert torch.equal(out, my_rows(expected(t, op, pre, post))), \
                (op, pre, post)


def test_negative_factor_wraps_uint8():
    # -0.7 * 10 = -7 is 249 as a uint8, as torch casts it, not 0.
    t = torch.full((4,), 10, dtype=torch.uint8)
    out = hvd.allreduce(t, op=hvd.Sum, prescale_factor=-0.7)
    assert out.tolist() == [(249 * SIZE) % 256] * 4


def test_float32_scales_in_float32():
    # 0.1f times 0.1 as a float32 differs in the last bit from the product
    # taken in double and rounded once: Horovod gives the former.
    t = torch.full((1,), 0.1, dtype=torch.float32)
    out = hvd.allreduce(t, op=hvd.Sum, prescale_factor=0.1)
    in_float = t * torch.tensor(0.1, dtype=torch.float32)
    in_double = (t.double() * 0.1).float()
    assert not torch.equal(in_float, in_double)
    total = in_float
    for _ in range(SIZE - 1):
        total = total + in_float
    assert torch.equal(out, total)
