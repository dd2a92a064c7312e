"""allreduce with op=Adasum, on a runtime that loads the adasum reducer
(configs/adasum.toml). Run under horovodrun on 1, 2 and 3 ranks."""

import os

import mxnet as mx
import numpy as np
import pytest

# Before init: this suite's runtime loads the adasum reducer.
os.environ.setdefault("HOROVOD_CONFIG", os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "configs", "adasum.toml"))

import horovod.mxnet as hvd  # noqa: E402

hvd.init()
RANK, SIZE = hvd.rank(), hvd.size()


def adasum_offered():
    try:
        hvd.allreduce(mx.nd.ones((2,)), name="adasum_probe", op=hvd.Adasum)
        return True
    except mx.base.MXNetError:  # every rank fails the op alike
        return False


pytestmark = pytest.mark.skipif(
    SIZE > 1 and not adasum_offered(),
    reason="the adasum reducer does not serve this job size")


def test_identical_vectors_give_the_vector():
    # Adasum(g, g) = g.
    g = mx.nd.array([1.0, -2.0, 0.5, 4.0])
    out = hvd.allreduce(g, op=hvd.Adasum, name="identical")
    assert np.allclose(out.asnumpy(), g.asnumpy(), rtol=1e-5)


def test_orthogonal_vectors_give_their_sum():
    g = np.zeros((SIZE, 3), dtype=np.float64)
    g[RANK] = RANK + 1.0
    out = hvd.allreduce(mx.nd.array(g, dtype=np.float64), op=hvd.Adasum,
                        name="orthogonal")
    want = np.zeros((SIZE, 3))
    for r in range(SIZE):
        want[r] = r + 1.0
    assert np.allclose(out.asnumpy(), want, rtol=1e-6)


def test_not_on_a_process_set():
    with pytest.raises(NotImplementedError):
        hvd.allreduce(mx.nd.ones((2,)), op=hvd.Adasum,
                      process_set=hvd.ProcessSet([0]))
