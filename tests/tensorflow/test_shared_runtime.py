"""horovod.torch and horovod.tensorflow in one process share one runtime:
the runtime one binding starts is the one the other uses (one libhorovod
mapping, one background thread, the same sockets), collectives of both
frameworks pair up in it, and shutting it down through one stops it for
both."""

import os
import re

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import tensorflow as tf  # noqa: E402

torch = pytest.importorskip("torch")

import horovod.tensorflow as hvd_tf  # noqa: E402
import horovod.torch as hvd_torch  # noqa: E402

_CORE = re.compile(r"/libhorovod\.so(\.[0-9]+)*$")


def core_mappings():
    """The distinct files mapped as the core library."""
    with open("/proc/self/maps") as maps:
        return {line.split()[-1] for line in maps
                if _CORE.search(line.strip())}


def threads_named(name):
    count = 0
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/comm") as comm:
                count += comm.read().strip() == name
        except FileNotFoundError:
            pass
    return count


def sockets():
    out = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:"):
            out.add(target)
    return out


def test_one_runtime_for_both_frameworks():
    assert not hvd_tf.is_initialized()
    hvd_torch.init()
    # Started by horovod.torch, seen by horovod.tensorflow.
    assert hvd_tf.is_initialized()
    rank, size = hvd_tf.rank(), hvd_tf.size()
    assert (rank, size) == (hvd_torch.rank(), hvd_torch.size())

    expect = sum(range(1, size + 1))
    out = hvd_torch.allreduce(torch.tensor([rank + 1.0]), op=hvd_torch.Sum,
                              name="shared.torch")
    assert out.item() == expect
    connections = sockets()
    threads = threads_named("hvd-background")
    assert threads == 1

    out = hvd_tf.allreduce(tf.constant([rank + 1.0]), op=hvd_tf.Sum,
                           name="shared.tf")
    assert out.numpy()[0] == expect
    # In flight together: a torch op and a TensorFlow op in one cycle.
    handle = hvd_torch.allreduce_async(torch.tensor([2.0 * rank]),
                                       op=hvd_torch.Sum, name="both.torch")
    gathered = hvd_tf.allgather(tf.constant([rank]), name="both.tf")
    assert hvd_torch.synchronize(handle).item() == 2.0 * sum(range(size))
    np.testing.assert_array_equal(gathered.numpy(), np.arange(size))

    # Nothing new: no second core, thread or connection.
    assert len(core_mappings()) == 1, core_mappings()
    assert threads_named("hvd-background") == 1
    assert sockets() == connections

    # Stopped through one binding, stopped for both; and up again. A
    # shutdown stops every rank's runtime: no rank may still be checking.
    hvd_tf.barrier()
    hvd_tf.shutdown()
    assert not hvd_torch.is_initialized()
    assert threads_named("hvd-background") == 0
    hvd_tf.init()
    assert hvd_torch.is_initialized()
    out = hvd_torch.allreduce(torch.tensor([1.0]), op=hvd_torch.Sum,
                              name="again.torch")
    assert out.item() == size
    assert threads_named("hvd-background") == 1
