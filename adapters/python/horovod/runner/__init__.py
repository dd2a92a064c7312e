"""The `horovodrun` command: runs the launcher shipped in this package
(bin/horovodrun, the same file the C++ build installs)."""

import os
import runpy
import sys


def launcher_path():
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return os.path.join(here, "bin", "horovodrun")


def main():
    path = launcher_path()
    if not os.path.exists(path):
        sys.stderr.write(f"horovodrun: {path} is missing: the horovod "
                         f"package is incomplete\n")
        return 1
    sys.argv[0] = path
    runpy.run_path(path, run_name="__main__")
    return 0
