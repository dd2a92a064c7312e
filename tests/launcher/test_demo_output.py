"""What a newcomer sees first: horovodrun -np 4 build/bin/horovod-demo, as
tools/demo runs it, at the default log level prints its results and nothing
that reads like a debug line, a warning or an error."""

import os
import re
import tempfile
import unittest

import launcher_testlib as lib

# A log line's level tag, and words that read like trouble to a user.
NOT_AT_DEFAULT_LEVEL = re.compile(r"\b(TRACE|DEBUG|INFO|WARNING)\b")
TROUBLE = re.compile(r"error|fail|timed out|warn|exception|abort",
                     re.IGNORECASE)


class DemoOutput(unittest.TestCase):
    def test_default_run_is_clean(self):
        demo = os.environ.get("DEMO")
        if not demo:
            self.skipTest("DEMO (horovod-demo) not set")
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("HOROVOD_")}
        # An empty folder: no horovod.toml of the caller's is read.
        with tempfile.TemporaryDirectory() as cwd:
            status, out, err, _ = lib.run(["-np", "4", demo], timeout=120,
                                          env=env, cwd=cwd)
        self.assertEqual(status, 0, out + err)
        self.assertTrue(out.strip(), "the demo printed nothing")
        lines = (out + err).splitlines()
        for line in lines:
            self.assertIsNone(NOT_AT_DEFAULT_LEVEL.search(line), line)
            self.assertIsNone(TROUBLE.search(line), line)


if __name__ == "__main__":
    unittest.main()
