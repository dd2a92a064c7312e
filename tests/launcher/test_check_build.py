"""horovodrun --check-build prints what horovod-info, next to it, says."""

import os
import shutil
import stat
import subprocess
import tempfile
import unittest

import launcher_testlib as lib


class CheckBuild(unittest.TestCase):
    def test_runs_the_horovod_info_beside_it(self):
        with tempfile.TemporaryDirectory() as prefix:
            # A prefix of its own: bin/horovodrun, and the horovod package
            # at ../python from it, as in the build tree.
            tmp = os.path.join(prefix, "bin")
            os.mkdir(tmp)
            run = os.path.join(tmp, "horovodrun")
            shutil.copy(lib.horovodrun(), run)
            os.symlink(os.path.join(os.path.dirname(lib.horovodrun()), "..",
                                    "python"),
                       os.path.join(prefix, "python"))
            result = subprocess.run([run, "--check-build"], text=True,
                                    capture_output=True)
            self.assertEqual(result.returncode, 1)
            self.assertIn("horovod-info not found", result.stderr)

            info = os.path.join(tmp, "horovod-info")
            with open(info, "w") as f:
                f.write("#!/bin/sh\necho 'Horovod 0.1.0 (stand-in)'\n"
                        "echo 'transports: shm tcp'\n")
            os.chmod(info, stat.S_IRWXU)
            result = subprocess.run([run, "--check-build"], text=True,
                                    capture_output=True)
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertEqual(result.stdout,
                             "Horovod 0.1.0 (stand-in)\ntransports: shm tcp\n")

    def test_built_horovod_info(self):
        real = os.path.join(os.path.dirname(lib.horovodrun()), "horovod-info")
        if not os.access(real, os.X_OK):
            self.skipTest("horovod-info is not built")
        result = subprocess.run([lib.horovodrun(), "--check-build"],
                                text=True, capture_output=True)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertTrue(result.stdout.strip())


if __name__ == "__main__":
    unittest.main()
