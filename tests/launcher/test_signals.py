"""Ctrl-C (SIGINT) and SIGTERM sent to horovodrun reach every rank; a rank
that ignores SIGTERM is killed after the grace period."""

import os
import signal
import tempfile
import unittest

import launcher_testlib as lib


class Signals(unittest.TestCase):
    def forward(self, sig, stubborn):
        with tempfile.TemporaryDirectory() as tmp:
            job = lib.Running(["-np", "3"] +
                              lib.rank_command("signals", tmp, stubborn))
            ready = job.wait_for_lines(lambda l: l.endswith(":ready\n"), 3)
            if ready:
                job.proc.send_signal(sig)
            else:
                job.proc.kill()
            status, out, err = job.finish()
            self.assertTrue(ready, out + err)
            self.assertEqual(status, 128 + sig, err)
            self.assertIn(f"received {signal.Signals(sig).name}", err)
            for r in range(3):
                with open(os.path.join(tmp, f"pid.{r}")) as f:
                    self.assertFalse(lib.process_alive(int(f.read())))
            return out, err

    def test_ctrl_c_is_forwarded(self):
        out, _ = self.forward(signal.SIGINT, stubborn=-1)
        for r in range(3):
            self.assertIn(f"[{r}]<stdout>:rank {r} got SIGINT", out)

    def test_sigterm_is_forwarded_then_sigkill(self):
        out, err = self.forward(signal.SIGTERM, stubborn=2)
        for r in range(2):
            self.assertIn(f"[{r}]<stdout>:rank {r} got SIGTERM", out)
        self.assertNotIn("rank 2 got SIGTERM", out)
        self.assertIn("rank 2 on localhost still running", err)


if __name__ == "__main__":
    unittest.main()
