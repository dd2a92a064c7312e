"""Which way a tensor goes to the core, what stream an op runs on, and
where its outputs are allocated.

- HOST: a host tensor, no stream: the core's host path.
- DEVICE: a CUDA tensor the core takes (hvd_accepts_memory). The core reads
  and writes it in place, on its own stream of that device, which first
  waits for the work queued so far on torch's current stream (an event
  recorded there, waited on by the core's stream: no host synchronization).
  The op completes once the core's done event on that stream is reached, so
  its outputs are ready for any later work. Outputs are allocated on the
  input's device; allgather's and alltoall's with the shapes the ranks
  negotiate, learnt first by a small host collective (gathered_rows,
  received_splits), and handed to the core to write into.
- STAGE: a CUDA tensor the core does not take: copied to host memory here,
  its results copied back to its device.

The fake device (HOROVOD_TORCH_FAKE_DEVICE=1, or use_fake_device(True)):
host tensors take the DEVICE route on the core's fake device (host memory
with stream and event semantics), so the decisions, output allocation and
shapes above run, through the core's device path, without a GPU (mpi_ops
reads _fake to know when a host tensor may skip route()).
"""

import collections
import ctypes
import os

import torch

from horovod.common import _capi
from horovod.common import collective as _collective
from horovod.common import device_layer
from horovod.torch import _tensors

HOST, DEVICE, STAGE = "host", "device", "stage"

_fake = os.environ.get("HOROVOD_TORCH_FAKE_DEVICE", "") == "1"

# Route -> tensors sent that way since the process started (tests read it).
taken = collections.Counter()


def use_fake_device(on):
    """Whether host tensors take the DEVICE route, on the fake device."""
    global _fake
    _fake = bool(on)


def route(tensor):
    """HOST, DEVICE or STAGE for `tensor` (see the module's comment)."""
    if tensor.is_cpu:
        way = DEVICE if _fake else HOST
    elif _tensors.core_accepts(tensor.device):
        way = DEVICE
    else:
        way = STAGE
    taken[way] += 1
    return way


def on_device(tensor):
    """Whether `tensor`, as handed to the core, is on the DEVICE route:
    a CUDA tensor (after staging only accepted ones are), or a host tensor
    while the fake device is on."""
    return not tensor.is_cpu or _fake


def stream_for(tensors):
    """The hvd_stream (an int; 0 for none) an op over `tensors` (as handed
    to the core) runs on: the core's stream of the first device tensor's
    device, ordered after torch's current stream of every CUDA device among
    them; the fake device's for host tensors on the DEVICE route."""
    on = [t for t in tensors if on_device(t)]
    if not on:
        return 0
    if on[0].is_cpu:
        return device_layer.stream(_capi.MEM_HOST, 0)
    for index in {_index(t) for t in on if t.is_cuda}:
        _order_after_torch(index)
    return device_layer.stream(_capi.MEM_CUDA, _index(on[0]))


def _index(tensor):
    index = tensor.device.index
    return index if index is not None else torch.cuda.current_device()


_external = {}


def _order_after_torch(index):
    """Makes the core's stream on CUDA device `index` wait for the work
    queued so far on torch's current stream there."""
    ours = _external.get(index)
    if ours is None:
        handle = device_layer.stream(_capi.MEM_CUDA, index)
        ours = _external[index] = torch.cuda.ExternalStream(
            device_layer.native_handle(handle),
            device=torch.device("cuda", index))
    ours.wait_stream(torch.cuda.current_stream(ours.device))


# ---- outputs ----------------------------------------------------------------

def empty_like_on(like, shape):
    """An uninitialized output of `shape` with the dtype and device of
    `like`."""
    return torch.empty(tuple(shape), dtype=like.dtype, device=like.device)


def allgather_outputs(tensors, rows):
    """allgather's outputs for `tensors`: each one's first dimension the
    sum over the ranks of theirs (rows: [set size, len(tensors)], every
    rank's first dimensions), its other dimensions its own."""
    if rows.dim() != 2 or rows.shape[1] != len(tensors):
        raise ValueError(f"rows of shape {tuple(rows.shape)} for "
                         f"{len(tensors)} tensor(s)")
    return [empty_like_on(t, (int(rows[:, i].sum()),) + tuple(t.shape[1:]))
            for i, t in enumerate(tensors)]


def alltoall_output(tensor, received):
    """alltoall's output for `tensor`: as many rows as the ranks send this
    one (received: one count per rank), its other dimensions its own."""
    return empty_like_on(tensor, (sum(received),) + tuple(tensor.shape[1:]))


def equal_splits(rows, size):
    """The splits of an alltoall given none: rows / size to each rank."""
    if rows % size:
        raise ValueError(f"alltoall without splits: the first dimension "
                         f"({rows}) must be divisible by the process set's "
                         f"size ({size})")
    return [rows // size] * size


# ---- output shapes, learnt before a device op ----------------------------

def _host_ints(collective, kind, name, values, ctype, process_set):
    """A small collective over the host integers `values` on the host path,
    waited for; its output's integers."""
    dtype = torch.int64 if ctype is ctypes.c_int64 else torch.int32
    mine = torch.tensor(values, dtype=dtype)
    core = _collective.enqueue(
        None, collective, _collective.op_name(kind, name, process_set),
        [mine], process_set=process_set)
    try:
        core.wait()
        data, shape, byte_offset = core.output(0)
        count = 1
        for n in shape:
            count *= n
        return list((ctype * count).from_address(data + byte_offset)) \
            if count else []
    finally:
        core.release()


def gathered_rows(rows, name, process_set):
    """Every rank's `rows` (this rank's first dimensions, one per tensor of
    an allgather) as a [set size, len(rows)] int64 tensor."""
    every = _host_ints(_capi.COLL_ALLGATHER, "allgather_rows", name,
                       [list(rows)], ctypes.c_int64, process_set)
    return torch.tensor(every, dtype=torch.int64).view(-1, len(rows))


def received_splits(splits, name, process_set):
    """The rows each rank sends this one in an alltoall in which this one
    sends splits[i] rows to rank i of the process set."""
    if len(splits) != process_set.size():
        raise ValueError(f"alltoall: {len(splits)} splits for a process set "
                         f"of {process_set.size()} ranks")
    return _host_ints(_capi.COLL_ALLTOALL, "alltoall_splits", name,
                      list(splits), ctypes.c_int32, process_set)


def allgather_given(hosts, name, process_set):
    """An allgather's outputs for `hosts` (as handed to the core) on the
    DEVICE route, on their devices with the shapes the ranks will
    negotiate; None off it (the core allocates them)."""
    if not on_device(hosts[0]):
        return None
    return allgather_outputs(hosts, gathered_rows(
        [h.shape[0] for h in hosts], name, process_set))


def alltoall_given(host, splits, name, process_set):
    """An alltoall's output for `host` sending `splits` (None: equal parts)
    on the DEVICE route, as a one-item list; None off it."""
    if not on_device(host):
        return None
    sends = splits if splits is not None else \
        equal_splits(host.shape[0], process_set.size())
    return [alltoall_output(host, received_splits(sends, name, process_set))]
