"""What the torch and TensorFlow stall tests (tests/*/stalls/) share: ranks
that end up in different calls, under horovodrun -np 2, must fail within
the stall shutdown time with a message naming the op, the process set and
where each rank is.

  remove_vs_barrier  rank 1 fails inside an op on a process set and goes to
                     barrier(); rank 0 removes the set
  add_vs_barrier     the same, rank 0 adding a set
  finished_early     rank 1 shuts horovod down while rank 0 removes a set
  removed_too_late   the same, rank 0 removing the set 1 s later, once the
                     shutdown has reached it: refused, the call named
  interrupted_add    rank 0 adds a set, rank 1 waits in barrier(): neither
                     call can end; each rank gets SIGINT (Ctrl-C) after
                     3 s (the stall warning and its flight dump included)
                     and must raise KeyboardInterrupt within 1 s, having
                     used under 5% of a core while blocked; then both
                     still run a collective
  interrupted_remove the same, rank 0 removing a set
The interrupted_* scenarios run with the stall shutdown off
(stall_shutdown_s), so only Ctrl-C can end their calls.
"""
import os
import signal
import sys
import threading
import time

RANK = int(os.environ["HOROVOD_RANK"])
# Generous against a loaded 2-core machine; the stall shutdown is 3 s.
DEADLINE_S = 20
CPU_LIMIT = 0.05
# Ctrl-C while blocked: sent after SIGINT_AFTER_S, seen within INTERRUPT_S.
SIGINT_AFTER_S = 3.0
INTERRUPT_S = 1.0


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


class Scenarios:
    """The shared scenarios on one binding: `hvd` is its module, `errors`
    the exceptions a failed collective raises there."""

    def __init__(self, hvd, errors):
        self.hvd = hvd
        self.errors = errors

    def expect_failure(self, call, *words):
        """Runs call(), which must raise one of `errors` within DEADLINE_S
        naming every one of `words`; returns the wait and the message."""
        with Waiting() as w:
            try:
                call()
            except self.errors as e:
                message = getattr(e, "message", None) or str(e)
            else:
                expect(False, "the call returned; it should have failed")
        print(f"rank {RANK}: failed after {w.wall:.1f} s as expected: "
              f"{message}", flush=True)
        expect(w.wall < DEADLINE_S, f"it took {w.wall:.1f} s to fail")
        for word in words:
            expect(word in message, f"the message does not name {word!r}")
        return w, message

    def fail_inside_set_op(self, odd):
        # The root is outside the set: this rank's call fails, and the
        # other rank never learns of it.
        try:
            self.hvd.broadcast_object({"x": 1}, root_rank=5, process_set=odd)
        except (ValueError,) + self.errors as e:
            print(f"rank {RANK}: the set op failed here: {e}", flush=True)
        else:
            expect(False, "broadcast_object from rank 5 did not fail")

    def set_change_vs_barrier(self, change, call):
        odd = self.hvd.add_process_set([1])
        if RANK == 1:
            self.fail_inside_set_op(odd)
            self.expect_failure(self.hvd.barrier, "barrier", call,
                                "rank 0 waits in " + call)
        else:
            self.expect_failure(lambda: change(odd), call, "barrier",
                                "rank 1 waits in barrier")

    def finished_early(self, late_s=0.0):
        odd = self.hvd.add_process_set([1])
        if RANK == 1:
            self.hvd.shutdown()  # as at the end of its script
            return
        time.sleep(late_s)
        self.expect_failure(lambda: self.hvd.remove_process_set(odd),
                            "hvd_remove_process_set", "shut down", "rank 1")

    def expect_interrupted(self, call):
        """Runs call(), which cannot end, sends this process SIGINT after
        SIGINT_AFTER_S, and checks that call() raises KeyboardInterrupt
        within INTERRUPT_S of it, sleeping meanwhile."""
        sent = []

        def ctrl_c():
            sent.append(time.monotonic())
            os.kill(os.getpid(), signal.SIGINT)

        # A launcher may start ranks with SIGINT ignored.
        previous = signal.signal(signal.SIGINT, signal.default_int_handler)
        timer = threading.Timer(SIGINT_AFTER_S, ctrl_c)
        try:
            with Waiting() as w:
                timer.start()
                try:
                    call()
                except KeyboardInterrupt:
                    caught = time.monotonic()
                else:
                    expect(False, "the call returned; it cannot end")
        finally:
            timer.cancel()
            signal.signal(signal.SIGINT, previous)
        latency = caught - sent[0]
        print(f"rank {RANK}: KeyboardInterrupt {latency * 1000:.0f} ms "
              f"after SIGINT; {100 * w.share():.1f}% of a core over "
              f"{w.wall:.1f} s blocked", flush=True)
        expect(latency < INTERRUPT_S,
               f"KeyboardInterrupt came {latency:.2f} s after SIGINT")
        expect(w.share() < CPU_LIMIT,
               f"{100 * w.share():.1f}% of a core while blocked")

    def interrupted_change(self, change):
        odd = self.hvd.add_process_set([1])
        if RANK == 0:
            self.expect_interrupted(lambda: change(odd))
        else:
            self.expect_interrupted(self.hvd.barrier)
        # The interrupted calls stay in flight; the runtime serves others,
        # and the ranks shut down only once both were interrupted.
        gathered = self.hvd.allgather_object(RANK)
        expect(gathered == [0, 1],
               f"allgather_object after Ctrl-C gave {gathered}")

    @staticmethod
    def stall_shutdown_s(name):
        """The stall shutdown a scenario runs with (0: off)."""
        return 0 if name.startswith("interrupted_") else 3

    def table(self):
        hvd = self.hvd
        return {
            "interrupted_add": lambda: self.interrupted_change(
                lambda odd: hvd.add_process_set([0])),
            "interrupted_remove": lambda: self.interrupted_change(
                hvd.remove_process_set),
            "remove_vs_barrier": lambda: self.set_change_vs_barrier(
                hvd.remove_process_set, "hvd_remove_process_set"),
            "add_vs_barrier": lambda: self.set_change_vs_barrier(
                lambda odd: hvd.add_process_set([0]), "hvd_add_process_set"),
            "finished_early": self.finished_early,
            "removed_too_late": lambda: self.finished_early(late_s=1.0),
        }

    def run(self, name, scenario, stall_shutdown_s, **kwargs):
        """One scenario in a runtime of its own (init, then shutdown), with
        a stall warning after 1 s and a shutdown after stall_shutdown_s."""
        # Read by init(): the configuration comes from the environment.
        os.environ.update({
            "HOROVOD_DYNAMIC_PROCESS_SETS": "1",
            "HOROVOD_TIMELINE": "DYNAMIC",
            "HOROVOD_STALL_CHECK_TIME_SECONDS": "1",
            "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS": str(stall_shutdown_s),
        })
        print(f"rank {RANK}: --- {name} {kwargs or ''}", flush=True)
        self.hvd.init()
        expect(self.hvd.size() == 2, "run me on 2 ranks")
        scenario(**kwargs)
        self.hvd.shutdown()
