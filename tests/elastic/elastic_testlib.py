"""Helpers for the elastic tests: a job of elastic_train.py under
horovodrun with a discovery script reading a hosts file, its workers'
logs, and the reference model those logs' membership history implies."""

import glob
import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TRAIN = os.path.join(HERE, "elastic_train.py")
CONFIGS = os.path.join(HERE, "configs")
# Three names of this machine that horovodrun counts as three hosts.
HOSTS = ["localhost", "127.0.0.1", socket.gethostname()]
EPOCHS, BATCH = 2, 32


def horovodrun():
    return os.environ["HOROVODRUN"]


class Running:
    """A command (horovodrun) in the background, its output collected."""

    def __init__(self, command):
        self.started = time.monotonic()
        self.proc = subprocess.Popen(command, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True)
        self.output = []
        self.reader = threading.Thread(target=self._read)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self.output.append(line)

    def wait_for(self, predicate, timeout=120):
        """Waits for an output line that satisfies `predicate`."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.proc.poll() is None:
            if any(predicate(line) for line in list(self.output)):
                return True
            time.sleep(0.05)
        return False

    def worker_pids(self):
        """horovodrun's children: the local workers."""
        pids = []
        for children in glob.glob(f"/proc/{self.proc.pid}/task/*/children"):
            with open(children) as f:
                pids += [int(p) for p in f.read().split()]
        return sorted(pids)

    def finish(self, timeout=60):
        try:
            status = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            status = "hung"
        self.reader.join()
        return status, "".join(self.output), time.monotonic() - self.started


class Job(Running):
    """horovodrun running elastic_train.py in the background."""

    def __init__(self, folder, hosts, args, config="shm.toml",
                 step_seconds=0.05, epochs=EPOCHS, prefix=()):
        """`prefix`: what horovodrun runs under (ip netns exec ...)."""
        self.folder = folder
        self.hosts_file = os.path.join(folder, "hosts.txt")
        self.set_hosts(hosts)
        self.logs = os.path.join(folder, "logs")
        os.makedirs(self.logs)
        super().__init__(list(prefix) + [
            horovodrun(), "--host-discovery-script", f"cat {self.hosts_file}",
            "--config", os.path.join(CONFIGS, config)] + args + [
            sys.executable, TRAIN, self.logs, str(epochs), str(BATCH),
            str(step_seconds)])

    def set_hosts(self, hosts):
        tmp = self.hosts_file + ".new"
        with open(tmp, "w") as f:
            f.write("".join(f"{h}\n" for h in hosts))
        os.replace(tmp, self.hosts_file)

    def events(self):
        """{worker: [(kind, fields...)]} from the workers' logs."""
        out = {}
        for path in sorted(glob.glob(os.path.join(self.logs, "*.log"))):
            name = os.path.basename(path)[:-4]
            with open(path) as f:
                out[name] = [line.split() for line in f if line.strip()]
        return out

    def wait_for_commits(self, count, timeout=120):
        """Waits until some worker committed `count` steps."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.proc.poll() is None:
            for lines in self.events().values():
                if any(e[0] == "committed" and int(e[1]) >= count
                       for e in lines):
                    return True
            time.sleep(0.02)
        return False

    def living_workers(self):
        """{worker: pid} of the workers running now."""
        living = {}
        for name, lines in self.events().items():
            pid = [int(e[1]) for e in lines if e[0] == "pid"][-1]
            if os.path.exists(f"/proc/{pid}"):
                living[name] = pid
        return living

    def kill_one(self, rng, spare=(), sig=signal.SIGKILL):
        """Sends `sig` to a random worker (not on `spare` hosts); returns
        its name."""
        candidates = [(name, pid)
                      for name, pid in self.living_workers().items()
                      if name.rsplit(".", 1)[0] not in spare]
        if not candidates:
            raise AssertionError("no worker left to kill:\n" +
                                 "".join(self.output))
        name, pid = rng.choice(sorted(candidates))
        time.sleep(rng.uniform(0, 0.05))
        os.kill(pid, sig)
        return name


def worlds(events):
    """{world: {worker: (rank, size, step at start)}} and, per world, the
    highest step any worker logged as committed in it."""
    starts, committed = {}, {}
    for name, lines in events.items():
        world = None
        for e in lines:
            if e[0] == "world":
                world = int(e[1])
                starts.setdefault(world, {})[name] = (int(e[3]), int(e[5]),
                                                      int(e[7]))
            elif e[0] == "committed" and world is not None:
                committed[world] = max(committed.get(world, 0), int(e[1]))
    return starts, committed


def finals(events):
    out = {}
    for name, lines in events.items():
        for e in lines:
            if e[0] == "final":
                out[name] = json.loads(" ".join(e[2:]))
    return out


def reference_model(history, seed=7, lr=0.5):
    """The model the membership history implies: the same initial model,
    and at each committed step, world of `size` ranks, each rank's batch of
    the epoch's remaining samples split over that world as ElasticSampler
    is documented to split them; the gradient is the mean over ranks."""
    import torch
    from sklearn.datasets import load_digits
    digits = load_digits()
    x_all = torch.tensor(digits.data / 16.0, dtype=torch.float64)
    y_all = torch.tensor(digits.target, dtype=torch.int64)
    torch.manual_seed(0)
    model = torch.nn.Linear(64, 10).double()
    n = len(x_all)
    processed, parts, batch_idx, current = set(), None, 0, None
    for epoch, world, size in history:
        if (epoch, world) != current:
            if current is not None and epoch != current[0]:
                processed = set()
            current = (epoch, world)
            remaining = [i for i in range(n) if i not in processed]
            random.Random(seed + epoch).shuffle(remaining)
            per_rank = -(-len(remaining) // size)
            padded = (remaining * 2)[:per_rank * size]
            parts = [padded[r::size] for r in range(size)]
            batch_idx = 0
        grads = None
        for part in parts:
            idx = part[batch_idx * BATCH:(batch_idx + 1) * BATCH]
            model.zero_grad()
            torch.nn.functional.cross_entropy(model(x_all[idx]),
                                              y_all[idx]).backward()
            g = [p.grad.clone() for p in model.parameters()]
            grads = g if grads is None else [a + b for a, b in zip(grads, g)]
            processed.update(idx)
        with torch.no_grad():
            for p, g in zip(model.parameters(), grads):
                p -= lr * g / size
        batch_idx += 1
    return [p.detach().flatten().tolist() for p in model.parameters()]


def max_difference(a, b):
    return max(abs(x - y) for pa, pb in zip(a, b) for x, y in zip(pa, pb))
