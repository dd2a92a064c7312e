"""A failing rank brings the job down: the others are terminated within
seconds, horovodrun exits non-zero naming the rank, host and status, and
what the job left in /dev/shm and /tmp is removed."""

import glob
import os
import re
import tempfile
import time
import unittest

import launcher_testlib as lib


def pids(folder, ranks):
    out = {}
    for r in ranks:
        with open(os.path.join(folder, f"pid.{r}")) as f:
            out[r] = int(f.read())
    return out


class Failure(unittest.TestCase):
    def assert_all_gone(self, folder, ranks):
        for r, pid in pids(folder, ranks).items():
            self.assertFalse(lib.process_alive(pid), f"rank {r} survived")

    def test_rank_exiting_non_zero(self):
        with tempfile.TemporaryDirectory() as tmp:
            status, out, err, seconds = lib.run(
                ["-np", "3"] + lib.rank_command("fail", tmp, 1, 3))
            self.assertEqual(status, 3, err)
            self.assertIn("rank 1 on host localhost exited with status 3", err)
            self.assertLess(seconds, 20)  # the others sleep for 120 s
            self.assert_all_gone(tmp, range(3))

    def test_rank_killed(self):
        with tempfile.TemporaryDirectory() as tmp:
            status, out, err, seconds = lib.run(
                ["-np", "3"] + lib.rank_command("fail", tmp, 2, "kill9"))
            self.assertEqual(status, 128 + 9, err)
            self.assertIn("rank 2 on host localhost was killed by signal 9 "
                          "(SIGKILL)", err)
            self.assertLess(seconds, 20)
            self.assert_all_gone(tmp, range(3))
            job = re.search(r"job=(\w+)", out).group(1)
            self.assertEqual(glob.glob(f"/dev/shm/hvd-{job}-*"), [])
            self.assertFalse(os.path.exists(f"/tmp/hvd-{job}"))

    def test_start_timeout(self):
        started = time.monotonic()
        status, out, err, seconds = lib.run(
            ["-np", "3", "--start-timeout", "2"] +
            lib.rank_command("slow-join", 1))
        self.assertEqual(status, 1, err)
        self.assertIn("rank 1 did not reach the rendezvous within 2 s", err)
        self.assertLess(time.monotonic() - started, 20)


if __name__ == "__main__":
    unittest.main()
