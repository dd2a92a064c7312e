"""The programs the package carries in horovod/bin/ (horovod-info,
horovod-bench, ...), and the console scripts that run them."""

import os
import sys


def tools_dir():
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin")


def _exec(name):
    path = os.path.join(tools_dir(), name)
    if not os.access(path, os.X_OK):
        sys.exit(f"{name}: {path} is missing: the horovod package is "
                 f"incomplete")
    os.execv(path, [path] + sys.argv[1:])


def horovod_info():
    _exec("horovod-info")


def horovod_bench():
    _exec("horovod-bench")
