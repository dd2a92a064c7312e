"""Process sets, ops before init, shutdown and re-init: each test starts
and stops the runtime itself. Run under horovodrun on 1, 2 and 3 ranks."""

import os

import mxnet as mx
import numpy as np
import pytest

import horovod.mxnet as hvd

# Known before init from the launcher, for building the sets.
SIZE = int(os.environ.get("HOROVOD_SIZE", "1"))
RANK = int(os.environ.get("HOROVOD_RANK", "0"))


def all_ranks_done():
    hvd.allreduce(mx.nd.ones((1,)), name="done")


@pytest.fixture
def sets():
    even = hvd.ProcessSet(range(0, SIZE, 2))
    odd = hvd.ProcessSet(range(1, SIZE, 2)) if SIZE > 1 else None
    hvd.init(process_sets=[s for s in (even, odd) if s is not None])
    yield even, odd
    all_ranks_done()
    hvd.shutdown()


def test_not_initialized_errors():
    assert not hvd.is_initialized()
    for query in (hvd.rank, hvd.size, hvd.local_rank, hvd.local_size,
                  hvd.cross_rank, hvd.cross_size):
        with pytest.raises(ValueError, match="not been initialized"):
            query()
    with pytest.raises(mx.base.MXNetError):
        hvd.allreduce(mx.nd.ones((2,)))


def test_reinit_after_shutdown():
    for round_ in range(2):
        hvd.init()
        out = hvd.allreduce(mx.nd.ones((3,)) * round_, op=hvd.Sum,
                            name="same.name")
        assert np.array_equal(out.asnumpy(), np.full(3, round_ * SIZE))
        hvd.init()  # a second init is a no-op, as in Horovod
        all_ranks_done()
        hvd.shutdown()
        assert not hvd.is_initialized()


def test_static_sets(sets):
    even, odd = sets
    for ps in (even, odd):
        if ps is None:
            continue
        if not ps.included():
            with pytest.raises(ValueError, match="not part"):
                hvd.allreduce(mx.nd.ones((2,)), process_set=ps)
            continue
        mine = mx.nd.ones((3,)) * (RANK + 1)
        want = sum(r + 1 for r in ps.ranks)
        out = hvd.allreduce(mine, op=hvd.Sum, process_set=ps)
        assert np.array_equal(out.asnumpy(), np.full(3, want))
        hvd.allreduce_(mine, op=hvd.Sum, process_set=ps)
        assert np.array_equal(mine.asnumpy(), np.full(3, want))
        got = hvd.allgather(mx.nd.array([RANK]), process_set=ps)
        assert list(got.asnumpy()) == ps.ranks
        root = len(ps.ranks) - 1  # a rank of the set, not of the world
        b = hvd.broadcast(mx.nd.array([RANK]), root, process_set=ps)
        assert b.asscalar() == ps.ranks[root]
        assert hvd.broadcast_object(RANK, root_rank=root,
                                    process_set=ps) == ps.ranks[root]
        assert hvd.allgather_object(RANK, process_set=ps) == ps.ranks
        n = len(ps.ranks)
        scattered = hvd.reducescatter(mx.nd.ones((n, 2)), op=hvd.Sum,
                                      process_set=ps)
        assert np.array_equal(scattered.asnumpy(), np.full((1, 2), n))
        sent = mx.nd.array([RANK] * n)
        assert list(hvd.alltoall(sent, process_set=ps).asnumpy()) == ps.ranks
        grouped = hvd.grouped_allreduce([mx.nd.ones((2,))], op=hvd.Sum,
                                        process_set=ps)
        assert np.array_equal(grouped[0].asnumpy(), np.full(2, n))


@pytest.mark.skipif(SIZE < 2, reason="a set of one rank is the global set")
def test_dynamic_sets():
    hvd.init(process_sets="dynamic")
    try:
        ps = hvd.add_process_set([0])
        if RANK == 0:
            out = hvd.allreduce(mx.nd.ones((2,)) * 7, op=hvd.Sum,
                                process_set=ps)
            assert np.array_equal(out.asnumpy(), np.full(2, 7))
        assert hvd.remove_process_set(ps)
        with pytest.raises(ValueError):
            hvd.allreduce(mx.nd.ones((2,)), process_set=ps)
    finally:
        all_ranks_done()
        hvd.shutdown()
