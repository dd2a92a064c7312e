"""Ranks that end up in different calls, under horovodrun -np 2: every rank
must fail within the stall shutdown time with a message that names the op,
the process set and where each rank is, and a rank that waits must sleep.

    horovodrun -np 2 python stall_scenarios.py [scenario...]

Each scenario runs in a runtime of its own (init, then shutdown), with a
stall warning after 1 s and a shutdown after 3 s (none for the
interrupted_* ones); with no argument, all:
those of tests/support/python/stall_scenarios_common.py, and
  different_ops      each rank waits in an allreduce the other never
                     submits: both fail naming the other's position, using
                     under 5% of a core meanwhile
  late_peer          rank 1 arrives 3 s late to an allreduce, a barrier and
                     a set removal (no stall shutdown): each completes, and
                     rank 0 uses under 5% of a core while it waits, first
                     without a timeline, then writing one
Prints "rank R: ok" when its checks pass, and exits non-zero otherwise.
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "support", "python"))

import torch  # noqa: E402

import horovod.torch as hvd  # noqa: E402
from horovod.common.exceptions import HorovodInternalError  # noqa: E402
from stall_scenarios_common import (  # noqa: E402
    CPU_LIMIT, RANK, Scenarios, Waiting, expect)

SHARED = Scenarios(hvd, (HorovodInternalError,))


def late_peer(timeline=None):
    if timeline:
        hvd.start_timeline(timeline)
    odd = hvd.add_process_set([1])
    steps = [
        ("allreduce", lambda: hvd.allreduce(torch.ones(4), name="late.x")),
        ("barrier", hvd.barrier),
        ("remove_process_set", lambda: hvd.remove_process_set(odd)),
    ]
    for what, step in steps:
        if RANK == 1:
            time.sleep(3)
        with Waiting() as w:
            step()
        if RANK == 0:
            print(f"rank 0: {what} waited {w.wall:.1f} s using "
                  f"{100 * w.share():.1f}% of a core", flush=True)
            expect(w.wall > 2, f"{what} did not wait for the late rank")
            expect(w.share() < CPU_LIMIT,
                   f"{what}: {100 * w.share():.1f}% of a core while waiting")


def different_ops():
    mine, theirs = ("stalled.a", "stalled.b") if RANK == 0 else \
        ("stalled.b", "stalled.a")
    other = 1 - RANK
    # horovod.torch names an allreduce "allreduce.<name>", as Horovod does.
    w, _ = SHARED.expect_failure(
        lambda: hvd.allreduce(torch.ones(4), name=mine),
        "'allreduce.%s': missing ranks %d" % (mine, other),
        "rank %d waits in allreduce 'allreduce.%s'" % (other, theirs))
    print(f"rank {RANK}: {100 * w.share():.1f}% of a core while stalled",
          flush=True)
    expect(w.share() < CPU_LIMIT,
           f"{100 * w.share():.1f}% of a core while stalled")


SCENARIOS = dict(SHARED.table(), different_ops=different_ops,
                 late_peer=late_peer)


def run(name, stall_shutdown_s, **kwargs):
    SHARED.run(name, SCENARIOS[name], stall_shutdown_s, **kwargs)
    timeline = kwargs.get("timeline")
    if timeline and RANK == 0:
        # Written by rank 0 while it waited.
        with open(timeline) as f:
            expect("late.x" in f.read(), "the timeline holds no late.x")
        os.remove(timeline)


def main():
    names = sys.argv[1:] or list(SCENARIOS)
    for name in names:
        expect(name in SCENARIOS, f"unknown scenario {name}")
        if name == "late_peer":
            # The late peer must not be taken for a stall.
            run(name, 0)
            run(name, 0, timeline=f"/tmp/stall_scenarios.{os.getpid()}.json")
        else:
            run(name, SHARED.stall_shutdown_s(name))
    print(f"rank {RANK}: ok", flush=True)


if __name__ == "__main__":
    main()
