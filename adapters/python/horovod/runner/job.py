"""A job of a fixed set of ranks started by horovodrun itself: place the
ranks, serve their rendezvous, start them, and supervise them until all
end, one fails (the others are torn down), they miss the start timeout, or
horovodrun is signalled (the signal is forwarded)."""

import os
import queue
import re
import secrets
import signal
import threading
import time

from horovod.runner.cleanup import remove_job_files
from horovod.runner.command_line import parse_seconds
from horovod.runner.environment import rank_env
from horovod.runner import flight_summary
from horovod.runner.hosts import hosts_from_args
from horovod.runner.log import Fatal, log, vlog
from horovod.runner.network import rendezvous_address
from horovod.runner.placement import place_ranks
from horovod.runner.processes import RankProcess, describe_status
from horovod.runner.remote import Launcher
from horovod.runner.rendezvous import Rendezvous

# Seconds between SIGTERM and SIGKILL when tearing ranks down.
KILL_GRACE_S = 3.0
# Seconds the survivors of a failed rank get to notice it and report it
# themselves (the control plane tells them at once) before the teardown.
FAILURE_GRACE_S = 1.5
DEFAULT_START_TIMEOUT_S = 30.0
# The runtime's words for a rank at fault (core/src/control/failures.cc,
# core/src/runtime/driver_loop.cc and op_intake.cc).
FAULT_LINE = re.compile(
    rb"\] rank (\d+) (?:\(host [^)]*\) )?((?:failed|shut down \(hvd_shutdown\))"
    rb".*)")


def new_job_id():
    return secrets.token_hex(6)


class Job:
    def __init__(self, args):
        self.args = args
        self.job_id = new_job_id()
        self.secret = secrets.token_bytes(32)
        self.launcher = Launcher(args)
        self.signal_received = None
        self.ranks = []  # RankProcess
        self.log_dir, self.own_log_dir = flight_summary.job_log_dir(
            self.job_id)
        self.fault = None  # (rank, what), the first the ranks reported

    def run(self):
        """Runs the job to its end; returns horovodrun's exit status."""
        hosts = hosts_from_args(self.args)
        slots = sum(n for _, n in hosts)
        np = self.args.np if self.args.np is not None else slots
        if np < 1:
            raise Fatal("-np must be at least 1")
        if np > slots:
            raise Fatal(f"-np {np} exceeds the {slots} slots of the hosts")
        if not self.args.command:
            raise Fatal("no command to run")
        self.ranks = [RankProcess(p) for p in place_ranks(hosts, np)]
        used_hosts = list(dict.fromkeys(r.host for r in self.ranks))
        interfaces = [i for i in (self.args.network_interfaces or "").split(",")
                      if i]
        address = rendezvous_address(used_hosts, interfaces)
        server = Rendezvous(address, np, self.secret, self.job_id)
        server.start()
        vlog(f"job {self.job_id}: {np} ranks on "
             f"{', '.join(f'{h}:{sum(r.host == h for r in self.ranks)}' for h in used_hosts)}; "
             f"rendezvous at {server.address}:{server.port}")

        signal.signal(signal.SIGINT, self._on_signal)
        signal.signal(signal.SIGTERM, self._on_signal)
        started = time.time()
        try:
            status = self._supervise(server)
        finally:
            for r in self.running():
                r.signal_group(signal.SIGKILL)
            for r in self.ranks:
                r.close()
            remove_job_files(self.job_id, used_hosts, self.launcher)
        flight_summary.report(self.log_dir, np, started, self.own_log_dir)
        return status

    def _output_folder(self, rank):
        if not self.args.output_filename:
            return None
        width = len(str(len(self.ranks) - 1))
        return os.path.join(self.args.output_filename, f"rank.{rank:0{width}d}")

    def _start_timeout(self):
        if self.args.start_timeout is not None:
            return self.args.start_timeout
        return parse_seconds(os.environ.get("HOROVOD_START_TIMEOUT",
                                            str(DEFAULT_START_TIMEOUT_S)),
                             "HOROVOD_START_TIMEOUT")

    def _supervise(self, server):
        exits = queue.Queue()
        started = time.monotonic()
        for r in self.ranks:
            env = rank_env(r.placement, len(self.ranks), server, self.secret,
                           self.job_id, self.args)
            env["HOROVOD_LOG_DIR"] = self.log_dir
            r.start(self.args.command, env, self.launcher,
                    self._output_folder(r.rank), self._watch_for_fault)
            threading.Thread(target=lambda r=r: exits.put((r, r.proc.wait())),
                             daemon=True).start()
        start_timeout = self._start_timeout()
        waiting_for_start = True
        left = len(self.ranks)
        while left:
            if self.signal_received is not None:
                name = signal.Signals(self.signal_received).name
                log(f"received {name}; forwarding it to the ranks")
                self._teardown(self.signal_received)
                return 128 + self.signal_received
            try:
                r, status = exits.get(timeout=0.1)
            except queue.Empty:
                if waiting_for_start and \
                        time.monotonic() - started > start_timeout:
                    waiting_for_start = False
                    if self._missed_start(server, start_timeout):
                        self._teardown(signal.SIGTERM)
                        return 1
                continue
            left -= 1
            vlog(f"rank {r.rank} on {r.host} {describe_status(status)}")
            if status != 0:
                log(f"rank {r.rank} on host {r.host} "
                    f"{describe_status(status)}; terminating the other ranks")
                self._teardown(signal.SIGTERM, after=FAILURE_GRACE_S)
                self._name_fault()
                return status if status > 0 else 128 - status
        return 0

    def _watch_for_fault(self, rank, line):
        """Notes the first rank the ranks' runtime names at fault: one
        that failed (died, fell silent, lost its connections) or shut
        down while others still needed it."""
        if self.fault is None:
            m = FAULT_LINE.search(line)
            if m:
                self.fault = (int(m.group(1)),
                              m.group(2).decode(errors="replace").strip())

    def _name_fault(self):
        # What the ended ranks wrote last may still be in their pipes.
        for r in self.ranks:
            if not r.running():
                for t in r.pumps:
                    t.join(timeout=1.0)
        if self.fault is None:
            return
        rank, what = self.fault
        if 0 <= rank < len(self.ranks):
            log(f"the ranks report rank {rank} on host "
                f"{self.ranks[rank].host} at fault: {what}")

    def _missed_start(self, server, start_timeout):
        """Whether some ranks use the rendezvous but others never came (a
        plain command that never uses it has nothing to wait for)."""
        joined = server.joined_ranks()
        if not joined or len(joined) == len(self.ranks):
            return False
        missing = [r.rank for r in self.ranks if r.rank not in joined]
        log(f"rank{'s' if len(missing) > 1 else ''} "
            f"{', '.join(map(str, missing))} did not reach the rendezvous "
            f"within {start_timeout:g} s (--start-timeout); terminating the "
            f"job")
        return True

    def _on_signal(self, signum, frame):
        if self.signal_received is None:
            self.signal_received = signum
        else:  # a second Ctrl-C: no more grace
            for r in self.running():
                r.signal_group(signal.SIGKILL)

    def running(self):
        return [r for r in self.ranks if r.running()]

    def _teardown(self, sig, after=0.0):
        """Waits `after` seconds for the ranks to end by themselves, then
        sends `sig` to every running rank, SIGKILL after the grace."""
        deadline = time.monotonic() + after
        while self.running() and time.monotonic() < deadline:
            time.sleep(0.05)
        victims = self.running()
        for r in victims:
            vlog(f"sending {signal.Signals(sig).name} to rank {r.rank}")
            r.signal_group(sig)
        deadline = time.monotonic() + KILL_GRACE_S
        while self.running() and time.monotonic() < deadline:
            time.sleep(0.05)
        for r in self.running():
            log(f"rank {r.rank} on {r.host} still running after "
                f"{KILL_GRACE_S:g} s; sending SIGKILL")
            r.signal_group(signal.SIGKILL)
        for r in victims:
            r.proc.wait()
            r.signal_group(signal.SIGKILL)  # what it left in its group
