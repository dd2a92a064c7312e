"""horovod.tensorflow when ranks end up in different calls, under horovodrun
-np 2 (as tests/torch/stalls): every rank fails within the stall shutdown
time with a message naming the op, the process set and where each rank is.

    horovodrun -np 2 python stall_scenarios.py [scenario...]

Each scenario runs in a runtime of its own (init, then shutdown), with a
stall warning after 1 s and a shutdown after 3 s; with no argument, all:
  remove_vs_barrier  rank 1 fails inside an op on a process set and goes to
                     barrier(); rank 0 removes the set
  add_vs_barrier     the same, rank 0 adding a set
  finished_early     rank 1 shuts horovod down while rank 0 removes a set
Prints "rank R: ok" when its checks pass, and exits non-zero otherwise.
"""
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402

import horovod.tensorflow as hvd  # noqa: E402

RANK = int(os.environ["HOROVOD_RANK"])
DEADLINE_S = 20  # generous on a loaded machine; the stall shutdown is 3 s


def expect(ok, what):
    if not ok:
        print(f"rank {RANK}: FAILED: {what}", flush=True)
        sys.exit(1)


def expect_failure(call, *words):
    start = time.monotonic()
    try:
        call()
    except (hvd.HorovodInternalError, tf.errors.OpError) as e:
        message = getattr(e, "message", None) or str(e)
    else:
        expect(False, "the call returned; it should have failed")
    took = time.monotonic() - start
    print(f"rank {RANK}: failed after {took:.1f} s as expected: {message}",
          flush=True)
    expect(took < DEADLINE_S, f"it took {took:.1f} s to fail")
    for word in words:
        expect(word in message, f"the message does not name {word!r}")


def fail_inside_set_op(odd):
    # The root is outside the set: this rank's op fails, and the other
    # rank never learns of it.
    try:
        hvd.broadcast_object({"x": 1}, root_rank=5, process_set=odd)
    except (ValueError, hvd.HorovodInternalError, tf.errors.OpError) as e:
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


SCENARIOS = {
    "remove_vs_barrier": lambda: set_change_vs_barrier(
        hvd.remove_process_set, "hvd_remove_process_set"),
    "add_vs_barrier": lambda: set_change_vs_barrier(
        lambda odd: hvd.add_process_set([0]), "hvd_add_process_set"),
    "finished_early": finished_early,
}


def main():
    # Read by init(): the configuration comes from the environment.
    os.environ.update({
        "HOROVOD_DYNAMIC_PROCESS_SETS": "1",
        "HOROVOD_TIMELINE": "DYNAMIC",
        "HOROVOD_STALL_CHECK_TIME_SECONDS": "1",
        "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS": "3",
    })
    for name in sys.argv[1:] or list(SCENARIOS):
        expect(name in SCENARIOS, f"unknown scenario {name}")
        print(f"rank {RANK}: --- {name}", flush=True)
        hvd.init()
        expect(hvd.size() == 2, "run me on 2 ranks")
        SCENARIOS[name]()
        hvd.shutdown()
    print(f"rank {RANK}: ok", flush=True)


if __name__ == "__main__":
    main()
