"""The elastic job: workers come and go, the job goes on.

Each world is a round of the rendezvous service with its own epoch and rank
assignment. The driver publishes a new world when a worker fails (its host
is blacklisted), when discovery adds or removes hosts (the running workers
hear of it at their next commit), and when a blacklisted host's cooldown
ends; it spawns the workers new slots need and stops those whose slot is
gone. Survivors keep their process: hvd.shutdown() and hvd.init() take them
into the next world. Below --min-np slots for longer than --elastic-timeout,
or past --reset-limit new worlds, the job ends with a message saying so."""

import os
import queue
import signal
import threading
import time

from horovod.runner import flight_summary
from horovod.runner.cleanup import remove_job_files
from horovod.runner.elastic.discovery import DiscoveryFailed
from horovod.runner.elastic.rendezvous import ElasticRendezvous
from horovod.runner.environment import rank_env
from horovod.runner.log import Fatal, log, vlog
from horovod.runner.network import rendezvous_address
from horovod.runner.placement import Placement
from horovod.runner.processes import RankProcess, describe_status

DISCOVERY_INTERVAL_S = 1.0
# A member's report that its world broke is acted on after this long, so
# that the exit of a worker that died (the usual cause) is seen first.
BROKEN_GRACE_S = 0.5
# Seconds a survivor of a broken world has to reach the next one; one that
# does not (a stopped or hung process) is killed, and its host blacklisted.
REJOIN_S = 10.0
KILL_GRACE_S = 3.0
# The peer timeout elastic workers get unless the environment sets one:
# a silent rank counts as dead after this long.
ELASTIC_PEER_TIMEOUT_S = 2


def place(members, host_order):
    """{(host, slot): Placement}: ranks fill the hosts in `host_order`,
    each host's members by slot."""
    ordered = sorted(members, key=lambda m: (host_order.index(m[0]), m[1]))
    hosts = list(dict.fromkeys(h for h, _ in ordered))
    placements = {}
    for rank, (host, slot) in enumerate(ordered):
        on_host = [m for m in ordered if m[0] == host]
        placements[(host, slot)] = Placement(
            rank, host, on_host.index((host, slot)), len(on_host),
            hosts.index(host), len(hosts))
    return placements


class Worker:
    """One worker process, known by (host, slot) across worlds."""

    def __init__(self, key, number):
        self.key = key
        self.process = RankProcess(Placement(number, key[0], 0, 1, 0, 1))
        self.retired = False  # stopped by the driver: its exit is no failure

    def __str__(self):
        return f"worker {self.key[0]}:{self.key[1]}"


class ElasticJob:
    def __init__(self, args, hosts, job_id, secret, launcher):
        self.args, self.hosts = args, hosts
        self.job_id, self.secret, self.launcher = job_id, secret, launcher
        self.min_np = args.min_np if args.min_np is not None else (
            args.np or 1)
        self.max_np = args.max_np
        self.start_np = max(self.min_np, args.np or self.min_np)
        self.timeout = args.elastic_timeout
        self.workers = {}  # (host, slot) -> Worker, running ones
        self.spawned = 0
        self.exits = queue.Queue()
        self.wake = threading.Event()  # set when a worker exits
        self.signal_received = None
        self.worlds = 0
        self.succeeded = False
        self.used_hosts = set()
        self.discovery_error = None  # the last one, said once
        self.failed_since = False  # a worker failed since the last world
        self.survivors = set()  # living members when the world was made
        self.rejoin_by = None  # when survivors must have reached it
        self.placements = {}  # (host, slot) -> Placement, newest world
        self.epoch = 0
        self.world_began = 0.0  # wall clock, as the dumps' file times
        self.log_dir, self.own_log_dir = flight_summary.job_log_dir(job_id)
        # (epoch, size, began, report by) of a broken world whose flight
        # dumps are summarised once its survivors are in the next one.
        self.broken_world = None

    # ---- the job's life ---------------------------------------------------

    def run(self):
        if not self.args.command:
            raise Fatal("no command to run")
        self._refresh_hosts()
        address = rendezvous_address(
            list(self.hosts.discovered) or ["localhost"],
            [i for i in (self.args.network_interfaces or "").split(",") if i])
        self.server = ElasticRendezvous(address, self.secret, self.job_id)
        self.server.start()
        signal.signal(signal.SIGINT, self._on_signal)
        signal.signal(signal.SIGTERM, self._on_signal)
        try:
            return self._supervise()
        finally:
            self.server.end("the job is over")
            for w in self.workers.values():
                w.process.signal_group(signal.SIGKILL)
            for w in self.workers.values():
                w.process.close()
            remove_job_files(self.job_id, sorted(self.used_hosts),
                             self.launcher)
            self._report_flight(force=True)
            flight_summary.remove_if_empty(self.log_dir, self.own_log_dir)

    def _supervise(self):
        need_world, waiting_since, wanted = True, None, self.start_np
        next_poll = 0.0
        while True:
            if self.signal_received is not None:
                name = signal.Signals(self.signal_received).name
                log(f"received {name}; forwarding it to the workers")
                self._stop_all(self.signal_received)
                return 128 + self.signal_received
            now = time.monotonic()
            if now >= next_poll and not self.succeeded:
                next_poll = now + DISCOVERY_INTERVAL_S
                need_world |= self._poll_hosts()
            need_world |= self._collect_exits()
            if not self.succeeded:
                need_world |= self._world_broke(now)
                self._kill_stragglers(now)
            self._report_flight()
            if self.succeeded:
                if not self.workers:
                    return 0
            elif need_world:
                status = self._try_new_world(wanted)
                if status == "ended":
                    return 1
                if status == "published":
                    need_world, waiting_since = False, None
                    wanted = self.min_np
                else:
                    waiting_since = waiting_since or now
                    if now - waiting_since > self.timeout:
                        flag = "-np" if wanted > self.min_np else "--min-np"
                        self._fail(
                            f"waited {self.timeout:g} s (--elastic-timeout) "
                            f"for at least {wanted} slots ({flag} {wanted}); "
                            f"{self._describe_slots()}")
                        return 1
            self.wake.wait(0.1)
            self.wake.clear()

    def _world_broke(self, now):
        """Whether a member reported that the newest world broke without a
        worker ending (a silent rank, declared dead by the others)."""
        since = self.server.broken_since()
        return since is not None and now - since > BROKEN_GRACE_S

    def _kill_stragglers(self, now):
        """After a failure, every survivor must reach the next world soon:
        one that does not is stopped or hung."""
        if self.rejoin_by is None or now < self.rejoin_by:
            return
        self.rejoin_by = None
        for key in self.server.absent_members():
            worker = self.workers.get(key)
            if worker is not None and key in self.survivors:
                log(f"{worker} did not reach the new world within "
                    f"{REJOIN_S:g} s after a failure; killing it")
                worker.process.signal_group(signal.SIGKILL)

    def _report_flight(self, force=False):
        """Summarises the flight dumps of the last broken world once its
        survivors reached the next one (they dump before they leave), or
        when they are past due."""
        if self.broken_world is None:
            return
        epoch, size, began, by = self.broken_world
        waiting = set(self.server.absent_members()) & self.survivors
        if waiting and not force and time.monotonic() < by:
            return
        self.broken_world = None
        flight_summary.report(self.log_dir, size, began, False,
                              f"world {epoch}")

    def _poll_hosts(self):
        """Polls discovery; whether the usable slots changed."""
        change = self._refresh_hosts()
        if change:
            self._retire_lost_slots()
            if self.worlds:
                self.server.note_update(change)
        return bool(change)

    def _describe_slots(self):
        usable = self.hosts.current()
        text = ", ".join(f"{h}:{n}" for h, n in usable.items()) or "none"
        blacklisted = [h for h in self.hosts.discovered
                       if self.hosts.blacklisted(h)]
        if blacklisted:
            text += f"; blacklisted: {', '.join(blacklisted)}"
        return f"usable hosts: {text}"

    def _fail(self, message):
        log(f"error: {message}; ending the job")
        self.server.end(f"the job ended: {message}")
        self._stop_all(signal.SIGTERM)

    # ---- hosts and worlds -------------------------------------------------

    def _refresh_hosts(self):
        try:
            change = self.hosts.refresh()
            self.discovery_error = None
            return change
        except DiscoveryFailed as e:
            if str(e) != self.discovery_error:  # once, not every second
                log(f"{e}; keeping the last hosts found")
            self.discovery_error = str(e)
            return self.hosts.update_usable()

    def _retire_lost_slots(self):
        usable = self.hosts.current()
        for key, w in self.workers.items():
            host, slot = key
            if slot >= usable.get(host, 0) and not w.retired:
                why = f"host {host} slot {slot} left the job"
                log(f"{why}; stopping {w}")
                w.retired = True
                self.server.retire(key, why)
                w.process.signal_group(signal.SIGTERM)

    def _try_new_world(self, wanted):
        """'published', 'waiting' (too few slots) or 'ended'."""
        usable = self.hosts.current()
        order = list(usable)
        slots = [(h, s) for h in order for s in range(usable[h])]
        living = [k for k in slots
                  if k in self.workers and not self.workers[k].retired]
        members = living + [k for k in slots if k not in living]
        if self.max_np is not None:
            members = members[:self.max_np]
        if len(members) < wanted:
            return "waiting"
        limit = self.args.reset_limit
        if limit is not None and self.worlds > limit:
            self._fail(f"membership changed again after {self.worlds - 1} "
                       f"resets (--reset-limit {limit})")
            return "ended"
        placements = place(members, order)
        # After a failure the survivors come at once; after growth they
        # come at their next commit, which may take any time.
        failure = self.server.broken_since() is not None or self.failed_since
        self.survivors = set(living)
        self.rejoin_by = time.monotonic() + REJOIN_S if failure else None
        self.failed_since = False
        if failure and self.worlds:
            self._report_flight(force=True)  # a world broken before
            self.broken_world = (self.epoch, len(self.placements),
                                 self.world_began, self.rejoin_by)
        epoch = self.server.publish(placements)
        self.placements, self.epoch = placements, epoch
        self.world_began = time.time()
        self.worlds += 1
        log(f"world {epoch}: {len(placements)} ranks on "
            f"{', '.join(f'{h}:{sum(1 for k in placements if k[0] == h)}' for h in dict.fromkeys(k[0] for k in placements))}")
        for key, p in placements.items():
            if key not in self.workers:
                self._spawn(key, p, len(placements))
        return "published"

    def _spawn(self, key, placement, size):
        worker = Worker(key, self.spawned)
        self.spawned += 1
        env = rank_env(placement, size, self.server, self.secret, self.job_id,
                       self.args)
        env["HOROVOD_LOG_DIR"] = self.log_dir
        env.update({"HOROVOD_ELASTIC": "1",
                    "HOROVOD_ELASTIC_SLOT": str(key[1]),
                    "HOROVOD_ELASTIC_TIMEOUT": f"{self.timeout:g}"})
        if "HOROVOD_PEER_TIMEOUT_SECONDS" not in os.environ:
            env["HOROVOD_PEER_TIMEOUT_SECONDS"] = str(ELASTIC_PEER_TIMEOUT_S)
        vlog(f"starting {worker} as [{worker.process.rank}]")
        worker.process.start(self.args.command, env, self.launcher,
                             self._output_folder(worker.process.rank))
        self.used_hosts.add(key[0])
        self.workers[key] = worker
        def wait():
            self.exits.put((worker, worker.process.proc.wait()))
            self.wake.set()

        threading.Thread(target=wait, daemon=True).start()

    def _output_folder(self, number):
        if not self.args.output_filename:
            return None
        return os.path.join(self.args.output_filename, f"worker.{number}")

    def _collect_exits(self):
        """Handles the workers that ended; whether a new world is needed."""
        need = False
        while True:
            try:
                worker, status = self.exits.get_nowait()
            except queue.Empty:
                return need
            self.workers.pop(worker.key, None)
            worker.process.close()
            if status == 0:
                vlog(f"{worker} finished")
                if not self.succeeded:
                    # Training is over: no world starts any more, and a
                    # worker still waiting for one is told so.
                    self.server.end("the job finished")
                self.succeeded = True
            elif worker.retired:
                vlog(f"{worker} stopped ({describe_status(status)})")
                need = True
            elif not self.succeeded:
                log(f"{self._describe_rank(worker)} "
                    f"{describe_status(status)}")
                self.failed_since = True
                self.hosts.blacklist(worker.key[0])
                self.hosts.update_usable()
                self._retire_lost_slots()
                need = True

    def _describe_rank(self, worker):
        host, slot = worker.key
        placement = self.placements.get(worker.key)
        rank = f"rank {placement.rank} of world {self.epoch}" if placement \
            else "a worker outside the world"
        return f"{rank} on host {host} ({worker}, slot {slot})"

    # ---- signals and teardown ---------------------------------------------

    def _on_signal(self, signum, frame):
        if self.signal_received is None:
            self.signal_received = signum
        else:
            for w in list(self.workers.values()):
                w.process.signal_group(signal.SIGKILL)

    def _stop_all(self, sig):
        for w in list(self.workers.values()):
            w.process.signal_group(sig)
        deadline = time.monotonic() + KILL_GRACE_S
        while any(w.process.running() for w in self.workers.values()) and \
                time.monotonic() < deadline:
            time.sleep(0.05)
        for w in list(self.workers.values()):
            w.process.signal_group(signal.SIGKILL)
