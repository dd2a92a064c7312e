"""horovod-bench as a user runs it: its table and CSV, the flags that choose
transport and reducer, every collective and dtype verified at both layers,
the MPI and Gloo comparisons, --sweep over every reducer, --plot, and clear
failures (bad flags, --peer mpi outside mpirun, a rank killed mid-run)."""

import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest

BENCH = os.environ.get("BENCH")
HOROVODRUN = os.environ.get("HOROVODRUN")
BENCH_MPI = os.environ.get("BENCH_MPI") == "1"
BENCH_GLOO = os.environ.get("BENCH_GLOO") == "1"
PREFIX = re.compile(r"^\[(\d+)\]<(stdout|stderr)>:")
COLLECTIVES = ["allreduce", "allgather", "broadcast", "alltoall",
               "reducescatter"]
CSV_HEADER = ("collective,dtype,ranks,layer,bytes,count,reducer,time_us,"
              "min_us,algbw_gbs,busbw_gbs")
MPI_COLUMNS = ",mpi_time_us,mpi_min_us,mpi_algbw_gbs,mpi_busbw_gbs,bw_ratio"
GLOO_COLUMNS = (",gloo_time_us,gloo_min_us,gloo_algbw_gbs,gloo_busbw_gbs,"
                "bw_ratio")
QUICK = ["--iters", "2", "--warmup", "0", "--timeout", "30"]


def bus_factor(collective, n):
    if collective == "allreduce":
        return 2.0 * (n - 1) / n
    if collective == "broadcast":
        return 1.0
    return (n - 1) / n


def launch(np, args, timeout=120, env=None):
    """horovodrun -np N horovod-bench ARGS: (status, rank 0's stdout lines,
    every other line, stderr)."""
    p = subprocess.run([HOROVODRUN, "-np", str(np), BENCH] + args,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=timeout,
                       env=dict(os.environ, **(env or {})))
    rank0, others = [], []
    for line in p.stdout.splitlines():
        m = PREFIX.match(line)
        body = line[m.end():] if m else line
        (rank0 if (m is None or m.group(1) == "0") else others).append(body)
    return p.returncode, rank0, others, p.stderr


def mpirun(args, timeout=120):
    p = subprocess.run(["mpirun", "-np", "2", "--oversubscribe"] + args,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=timeout)
    return p.returncode, p.stdout.splitlines(), p.stderr


def csv_rows(lines):
    rows = [l for l in lines if l and not l.startswith("#")]
    return rows[0], [r.split(",") for r in rows[1:]]


def table_rows(lines):
    return [l.split() for l in lines if l.strip() and not l.startswith("#")]


class Output(unittest.TestCase):
    def check_csv(self, collective, layer, extra=()):
        status, out, others, err = launch(
            2, ["-c", collective, "--layer", layer, "--csv", "-b", "4",
                "-e", "64K", "-f", "16"] + QUICK + list(extra))
        self.assertEqual(status, 0, err)
        self.assertEqual(others, [], "only rank 0 prints")
        header, rows = csv_rows(out)
        self.assertEqual(header, CSV_HEADER)
        # 4, 64, 1024, 16384 bytes; allgather, alltoall and reducescatter
        # need one element per rank, so their first size is 8.
        sizes = [int(r[4]) for r in rows]
        first = 4 if collective in ("allreduce", "broadcast") else 8
        self.assertEqual(sizes, [first, 64, 1024, 16384])
        for r in rows:
            self.assertEqual(len(r), len(CSV_HEADER.split(",")), r)
            self.assertEqual(r[0:4], [collective, "float32", "2", layer])
            self.assertEqual(int(r[5]) * 4, int(r[4]))
            median, minimum = float(r[7]), float(r[8])
            self.assertGreater(median, 0)
            self.assertLessEqual(minimum, median)
            algbw, busbw = float(r[9]), float(r[10])
            self.assertAlmostEqual(busbw, algbw * bus_factor(collective, 2),
                                   delta=1e-5 * algbw)
        return rows

    # The default [reducer] load: on one host, native runs shm's collectives.
    PLANNER_CHOICES = ("native", "ring", "tree", "halving-doubling")

    def test_every_collective_at_the_collective_layer(self):
        for collective in COLLECTIVES:
            with self.subTest(collective=collective):
                rows = self.check_csv(collective, "collective")
                for r in rows:
                    self.assertIn(r[6], self.PLANNER_CHOICES)

    def test_every_collective_at_the_runtime_layer(self):
        for collective in COLLECTIVES:
            with self.subTest(collective=collective):
                self.check_csv(collective, "runtime")

    def test_dtypes(self):
        for collective, dtype in (("allreduce", "float16"),
                                  ("reducescatter", "bfloat16"),
                                  ("allgather", "float64"),
                                  ("alltoall", "int32"),
                                  ("broadcast", "int64"),
                                  ("allreduce", "int64")):
            with self.subTest(collective=collective, dtype=dtype):
                status, out, _, err = launch(
                    2, ["-c", collective, "-d", dtype, "--csv", "-b", "4",
                        "-e", "1M", "-f", "64"] + QUICK)
                self.assertEqual(status, 0, err)
                _, rows = csv_rows(out)
                self.assertEqual(len(rows), 4)
                self.assertTrue(all(r[1] == dtype for r in rows))

    def test_text_table(self):
        status, out, others, err = launch(
            2, ["-b", "1K", "-e", "4K"] + QUICK)
        self.assertEqual(status, 0, err)
        self.assertEqual(others, [])
        self.assertTrue(out[0].startswith("# horovod-bench: allreduce, "
                                          "float32, 2 rank(s), 1 KiB to "
                                          "4 KiB"), out[0])
        self.assertTrue(any("collective layer" in l and "shm" in l
                            for l in out), out)
        rows = table_rows(out)
        self.assertEqual([int(r[0]) for r in rows], [1024, 2048, 4096])
        self.assertTrue(out[-1].startswith("# Avg bus bandwidth"), out[-1])


class Choices(unittest.TestCase):
    def test_reducer_flag_forces_every_size(self):
        for layer, reducer in (("collective", "ring"), ("collective", "tree"),
                               ("runtime", "ring")):
            with self.subTest(layer=layer, reducer=reducer):
                status, out, _, err = launch(
                    2, ["--layer", layer, "--reducer", reducer, "-b", "4",
                        "-e", "1M", "-f", "32"] + QUICK)
                self.assertEqual(status, 0, err)
                self.assertTrue(any(l.startswith("# config: ") and
                                    "--reducer " + reducer in l for l in out))
                rows = table_rows(out)
                self.assertEqual(len(rows), 4)  # 4 B, 128 B, 4 KiB, 128 KiB
                self.assertTrue(all(r[3] == reducer for r in rows), rows)

    def test_rules_of_the_config_file(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "horovod.toml")
            with open(path, "w") as f:
                f.write('[[allreduce.rules]]\nmax_bytes = "2KiB"\n'
                        'reducer = "tree"\n'
                        '[[allreduce.rules]]\nreducer = "ring"\n')
            for layer in ("collective", "runtime"):
                with self.subTest(layer=layer):
                    status, out, _, err = launch(
                        2, ["--layer", layer, "--config", path, "-b", "1K",
                            "-e", "4K"] + QUICK)
                    self.assertEqual(status, 0, err)
                    self.assertIn("# config: " + path, out)
                    self.assertEqual([r[3] for r in table_rows(out)],
                                     ["tree", "ring", "ring"])

    def test_transport_flag(self):
        status, out, _, err = launch(
            2, ["--transport-intra", "tcp", "-b", "4", "-e", "64K", "-f",
                "16"] + QUICK, env={"HOROVOD_NETWORK_INTERFACES": "lo"})
        self.assertEqual(status, 0, err)
        self.assertTrue(any("transport.intra transport 'tcp'" in l
                            for l in out), out)


class Failures(unittest.TestCase):
    def test_bad_flags(self):
        for args, message in (
                (["-c", "allreduse"], "--collective: unknown value "
                                      "'allreduse'"),
                (["-b", "1X"], "--min-bytes: '1X' is not a size"),
                (["-b", "1M", "-e", "1K"], "--min-bytes (1048576) is above "
                                           "--max-bytes (1024)"),
                (["--layer"], "option --layer needs a value")):
            with self.subTest(args=args):
                p = subprocess.run([BENCH] + args, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
                self.assertEqual(p.returncode, 2)
                self.assertIn(message, p.stderr)

    def test_peer_mpi_outside_mpirun(self):
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("OMPI_COMM_WORLD", "PMIX_"))}
        p = subprocess.run([BENCH, "--peer", "mpi", "-e", "4"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, env=env, timeout=60)
        self.assertEqual(p.returncode, 1)
        expected = ("--peer mpi needs the job started by mpirun"
                    if BENCH_MPI else "built without MPI")
        self.assertIn(expected, p.stderr)

    def interrupt_rank_1(self, layer, sig, timeout=20, env=None):
        """Runs a long bench, sends `sig` to rank 1 inside the timed loop:
        (exit status, stderr)."""
        proc = subprocess.Popen(
            [HOROVODRUN, "-np", "2", BENCH, "--layer", layer, "-b", "1M",
             "-e", "1M", "--iters", "100000000", "--warmup", "0",
             "--timeout", str(timeout)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=dict(os.environ, **(env or {})))
        started = threading.Event()

        def read():
            for line in proc.stdout:
                if "# horovod-bench:" in line:
                    started.set()
        reader = threading.Thread(target=read)
        reader.start()
        try:
            self.assertTrue(started.wait(60), "the bench never started")
            time.sleep(0.5)  # well inside the timed loop
            os.kill(rank_process(proc.pid, 1), sig)
            began = time.monotonic()
            err = proc.stderr.read()
            status = proc.wait(60)
            self.assertLess(time.monotonic() - began, 30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            reader.join()
            proc.stdout.close()
            proc.stderr.close()
        return status, err

    def test_killed_rank_fails_the_job_naming_it(self):
        status, err = self.interrupt_rank_1("collective", signal.SIGKILL)
        self.assertNotEqual(status, 0)
        self.assertRegex(err, r"rank 1\b")

    def test_stopped_rank_is_named_by_the_bench(self):
        # A rank that stops answering (the launcher sees nothing wrong) is
        # found by the heartbeats; rank 0's bench then fails naming it.
        for layer in ("collective", "runtime"):
            with self.subTest(layer=layer):
                status, err = self.interrupt_rank_1(
                    layer, signal.SIGSTOP,
                    env={"HOROVOD_PEER_TIMEOUT_SECONDS": "2"})
                self.assertNotEqual(status, 0)
                self.assertRegex(err, r"horovod-bench: rank 0: allreduce of "
                                      r"1048576 bytes .*rank 1 .*failed")


    def test_timeout(self):
        # A rank that hangs while the heartbeats say nothing yet: the
        # collective gives up after --timeout.
        for layer in ("collective", "runtime"):
            with self.subTest(layer=layer):
                status, err = self.interrupt_rank_1(
                    layer, signal.SIGSTOP, timeout=2,
                    env={"HOROVOD_PEER_TIMEOUT_SECONDS": "120"})
                self.assertNotEqual(status, 0)
                self.assertRegex(err, r"horovod-bench: rank 0: allreduce of "
                                      r"1048576 bytes .*did not finish within "
                                      r"2 s \(--timeout\)")


@unittest.skipUnless(BENCH_MPI, "built without Open MPI")
class MpiPeer(unittest.TestCase):
    def test_runtime_layer_over_tcp_against_mpi_over_tcp(self):
        status, out, err = mpirun(
            ["--mca", "pml", "ob1", "--mca", "btl", "self,tcp",
             "--mca", "btl_tcp_if_include", "lo",
             "-x", "HOROVOD_NETWORK_INTERFACES=lo",
             BENCH, "--peer", "mpi", "--layer", "runtime",
             "--transport-intra", "tcp", "--csv", "-b", "4", "-e", "16K",
             "-f", "16"] + QUICK)
        self.assertEqual(status, 0, err)
        header, rows = csv_rows(out)
        self.assertEqual(header, CSV_HEADER + MPI_COLUMNS)
        self.assertEqual([int(r[4]) for r in rows], [4, 64, 1024, 16384])
        for r in rows:
            ours, peer, ratio = float(r[10]), float(r[14]), float(r[15])
            self.assertGreater(peer, 0)
            self.assertAlmostEqual(ratio, ours / peer, delta=1e-4 * ratio)

    def test_every_collective_against_mpi(self):
        for peer in ("mpi", "mpi-nb"):
            for collective in COLLECTIVES:
                with self.subTest(peer=peer, collective=collective):
                    status, out, err = mpirun(
                        ["--mca", "pml", "ob1", "--mca", "btl", "self,vader",
                         BENCH, "--peer", peer, "-c", collective, "--csv",
                         "-b", "64", "-e", "4K", "-f", "64"] + QUICK)
                    self.assertEqual(status, 0, err)
                    header, rows = csv_rows(out)
                    self.assertIn(peer + "_time_us", header)
                    self.assertEqual(len(rows), 2)
                    for r in rows:
                        self.assertGreater(float(r[11]), 0)

    def test_nonblocking_peer_names_the_nonblocking_call(self):
        status, out, err = mpirun(
            ["--mca", "pml", "ob1", "--mca", "btl", "self,vader",
             BENCH, "--peer", "mpi-nb", "-b", "4", "-e", "4"] + QUICK)
        self.assertEqual(status, 0, err)
        self.assertTrue(any("(MPI_Iallreduce + MPI_Test on MPI_COMM_WORLD)"
                            in l for l in out), out)


class Sweep(unittest.TestCase):
    def test_every_reducer_at_every_size(self):
        status, out, others, err = launch(
            2, ["--sweep", "--csv", "-b", "4", "-e", "1M", "-f", "64"] + QUICK)
        self.assertEqual(status, 0, err)
        self.assertEqual(others, [])
        header, rows = csv_rows([l for l in out if not l.startswith("#")])
        self.assertEqual(header, CSV_HEADER)
        by_size = {}
        for r in rows:
            by_size.setdefault(int(r[4]), []).append(r[6])
        self.assertEqual(sorted(by_size), [4, 256, 16384, 1048576])
        for size, reducers in by_size.items():
            # ring and tree offer every size on one host; hierarchical none.
            self.assertIn("ring", reducers, size)
            self.assertIn("tree", reducers, size)
            self.assertNotIn("hierarchical", reducers, size)
            self.assertEqual(len(reducers), len(set(reducers)), size)

    def test_summary_names_the_fastest_and_the_rules(self):
        status, out, _, err = launch(
            2, ["--sweep", "-b", "4", "-e", "4M", "-f", "32"] + QUICK)
        self.assertEqual(status, 0, err)
        self.assertTrue(any(l.startswith("# sweep: every size with each of ")
                            for l in out), out)
        at = [i for i, l in enumerate(out) if l.startswith(
            "# sweep: the fastest reducer (median time) per size")][0]
        self.assertRegex(out[at + 1], r"^#   from 4 B +[\w-]+$")
        self.assertTrue(any(l.startswith("# crossover points: ")
                            for l in out[at:]))
        rules = out[out.index("# rules that pick the fastest "
                              "(horovod.toml):"):]
        self.assertEqual(rules[1], "#   [[allreduce.rules]]")
        self.assertTrue(rules[-1].startswith("#   reducer = "), rules)

    def test_sweep_needs_the_collective_layer(self):
        p = subprocess.run([BENCH, "--sweep", "--layer", "runtime"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--sweep needs --layer collective", p.stderr)


class Plot(unittest.TestCase):
    def test_plot_of_a_sweep(self):
        with tempfile.TemporaryDirectory() as tmp:
            png = os.path.join(tmp, "sweep.png")
            status, out, _, err = launch(
                2, ["--sweep", "--plot", png, "-b", "4", "-e", "64K",
                    "-f", "16"] + QUICK)
            self.assertEqual(status, 0, err)
            with open(png, "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
            with open(os.path.join(tmp, "sweep.csv")) as f:
                lines = f.read().splitlines()
            self.assertEqual(lines[0], "bytes,series,time_us,busbw_gbs")
            series = {l.split(",")[1] for l in lines[1:]}
            self.assertTrue({"ring", "tree"} <= series, series)
            self.assertIn(f"horovod-bench: plot written to {png}", out)

    def test_plot_failure_names_the_script(self):
        with tempfile.TemporaryDirectory() as tmp:
            png = os.path.join(tmp, "p.png")
            status, _, _, err = launch(
                2, ["--plot", png, "-b", "4", "-e", "4"] + QUICK,
                env={"HOROVOD_BENCH_PLOT": os.path.join(tmp, "missing")})
            self.assertEqual(status, 1)
            self.assertIn("--plot: python3 " + os.path.join(tmp, "missing"),
                          err)
            self.assertTrue(os.path.exists(os.path.join(tmp, "p.csv")))


@unittest.skipUnless(BENCH_GLOO, "built without Gloo")
class GlooPeer(unittest.TestCase):
    def test_allreduce_next_to_gloo(self):
        status, out, _, err = launch(
            2, ["--peer", "gloo", "--csv", "-b", "4", "-e", "64K", "-f",
                "16"] + QUICK)
        self.assertEqual(status, 0, err)
        header, rows = csv_rows(out)
        self.assertEqual(header, CSV_HEADER + GLOO_COLUMNS)
        self.assertEqual([int(r[4]) for r in rows], [4, 64, 1024, 16384])
        for r in rows:
            ours, peer, ratio = float(r[10]), float(r[14]), float(r[15])
            self.assertGreater(peer, 0)
            self.assertAlmostEqual(ratio, ours / peer, delta=1e-4 * ratio)

    def test_text_table_names_gloo(self):
        status, out, _, err = launch(
            2, ["--peer", "gloo", "-b", "1K", "-e", "1K"] + QUICK)
        self.assertEqual(status, 0, err)
        self.assertTrue(any(l.startswith("# peer: Gloo (gloo::allreduce")
                            for l in out), out)
        self.assertTrue(any("ours/gloo" in l for l in out), out)
        self.assertTrue(any(l.startswith("# Avg bus bandwidth gloo:")
                            for l in out), out)

    def test_only_allreduce(self):
        status, _, _, err = launch(
            2, ["--peer", "gloo", "-c", "allgather", "-e", "4"] + QUICK)
        self.assertEqual(status, 1)
        self.assertIn("--peer gloo: only allreduce is compared with Gloo",
                      err)


def rank_process(launcher, rank):
    """The pid of rank `rank`'s horovod-bench under the launcher `launcher`."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        for pid in descendants(launcher):
            try:
                with open(f"/proc/{pid}/environ", "rb") as f:
                    env = f.read().split(b"\0")
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    cmd = f.read()
            except OSError:
                continue
            if (f"HOROVOD_RANK={rank}".encode() in env and
                    os.path.basename(BENCH).encode() in cmd):
                return pid
        time.sleep(0.1)
    raise AssertionError(f"rank {rank}'s process not found")


def descendants(root):
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        for child in children.get(pid, []):
            found.append(child)
            todo.append(child)
    return found


if __name__ == "__main__":
    if not BENCH or not HOROVODRUN:
        sys.exit("set BENCH and HOROVODRUN")
    unittest.main()
