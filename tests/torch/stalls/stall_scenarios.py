"""Ranks that end up in different calls, under horovodrun -np 2: every rank
must fail within the stall shutdown time with a message that names the op,
the process set and where each rank is, and a rank that waits must sleep.

    horovodrun -np 2 python stall_scenarios.py [scenario...]

Each scenario runs in a runtime of its own (init, then shutdown), with a
stall warning after 1 s and a shutdown after 3 s; with no argument, all:
  remove_vs_barrier  rank 1 fails inside an op on a process set and goes to
                     barrier(); rank 0 removes the set
  add_vs_barrier     the same, rank 0 adding a set
  finished_early     rank 1 shuts horovod down while rank 0 removes a set
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

import torch

import horovod.torch as hvd
from horovod.common.exceptions import HorovodInternalError

RANK = int(os.environ["HOROVOD_RANK"])
# Generous against a loaded 2-core machine; the stall shutdown is 3 s.
DEADLINE_S = 20
CPU_LIMIT = 0.05


def cpu_seconds():
    t = os.times()
    return t.user + t.system


class Waiting:
    """Times a wait on this rank: wall clock and CPU of the whole process
    (the runtime's threads included)."""

    def __enter__(self):
        self.wall, self.cpu = time.monotonic(), cpu_seconds()
        return self

    def __exit__(self, *exc):
        self.wall = time.monotonic() - self.wall
        self.cpu = cpu_seconds() - self.cpu
        return False

    def share(self):
        return self.cpu / self.wall


def expect(ok, what):
    if not ok:
        print(f"rank {RANK}: FAILED: {what}", flush=True)
        sys.exit(1)


def expect_failure(call, *words):
    """Runs call(), which must raise HorovodInternalError within DEADLINE_S
    naming every one of `words`; returns the wait and the message."""
    with Waiting() as w:
        try:
            call()
        except HorovodInternalError as e:
            message = str(e)
        else:
            expect(False, "the call returned; it should have failed")
    print(f"rank {RANK}: failed after {w.wall:.1f} s as expected: {message}",
          flush=True)
    expect(w.wall < DEADLINE_S, f"it took {w.wall:.1f} s to fail")
    for word in words:
        expect(word in message, f"the message does not name {word!r}")
    return w, message


def fail_inside_set_op(odd):
    # The root is outside the set: this rank's call fails before it
    # submits anything, and the other rank never learns of it.
    try:
        hvd.broadcast_object({"x": 1}, root_rank=5, process_set=odd)
    except (ValueError, HorovodInternalError) as e:
        print(f"rank {RANK}: the set op failed here: {e}", flush=True)
    else:
        expect(False, "broadcast_object from rank 5 did not fail")


def set_change_vs_barrier(change, call):
    odd = hvd.add_process_set([1])
    if RANK == 1:
        fail_inside_set_op(odd)
        expect_failure(hvd.barrier, "barrier", call, "rank 0 waits in " + call)
    else:
        expect_failure(lambda: change(odd), call, "barrier",
                       "rank 1 waits in barrier")


def finished_early():
    odd = hvd.add_process_set([1])
    if RANK == 1:
        hvd.shutdown()  # as at the end of its script
        return
    expect_failure(lambda: hvd.remove_process_set(odd),
                   "hvd_remove_process_set", "shut down", "rank 1")


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
    w, _ = expect_failure(
        lambda: hvd.allreduce(torch.ones(4), name=mine),
        "'allreduce.%s': missing ranks %d" % (mine, other),
        "rank %d waits in allreduce 'allreduce.%s'" % (other, theirs))
    print(f"rank {RANK}: {100 * w.share():.1f}% of a core while stalled",
          flush=True)
    expect(w.share() < CPU_LIMIT,
           f"{100 * w.share():.1f}% of a core while stalled")


SCENARIOS = {
    "remove_vs_barrier": lambda: set_change_vs_barrier(
        hvd.remove_process_set, "hvd_remove_process_set"),
    "add_vs_barrier": lambda: set_change_vs_barrier(
        lambda odd: hvd.add_process_set([0]), "hvd_add_process_set"),
    "finished_early": finished_early,
    "different_ops": different_ops,
    "late_peer": late_peer,
}


def run(name, stall_shutdown_s, **kwargs):
    # Read by init(): the configuration comes from the environment.
    os.environ.update({
        "HOROVOD_DYNAMIC_PROCESS_SETS": "1",
        "HOROVOD_TIMELINE": "DYNAMIC",
        "HOROVOD_STALL_CHECK_TIME_SECONDS": "1",
        "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS": str(stall_shutdown_s),
    })
    print(f"rank {RANK}: --- {name} {kwargs or ''}", flush=True)
    hvd.init()
    expect(hvd.size() == 2, "run me on 2 ranks")
    SCENARIOS[name](**kwargs)
    hvd.shutdown()
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
            run(name, 3)
    print(f"rank {RANK}: ok", flush=True)


if __name__ == "__main__":
    main()
