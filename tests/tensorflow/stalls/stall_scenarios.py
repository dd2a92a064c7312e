"""horovod.tensorflow when ranks end up in different calls, under horovodrun
-np 2: the scenarios of tests/support/python/stall_scenarios_common.py.

    horovodrun -np 2 python stall_scenarios.py [scenario...]

Each scenario runs in a runtime of its own, with a stall warning after 1 s
and a shutdown after 3 s (none for the interrupted_* ones); with no
argument, all. Prints "rank R: ok" when
its checks pass, and exits non-zero otherwise.
"""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "support", "python"))

import tensorflow as tf  # noqa: E402

import horovod.tensorflow as hvd  # noqa: E402
from stall_scenarios_common import RANK, Scenarios, expect  # noqa: E402


def main():
    scenarios = Scenarios(hvd, (hvd.HorovodInternalError, tf.errors.OpError))
    table = scenarios.table()
    for name in sys.argv[1:] or list(table):
        expect(name in table, f"unknown scenario {name}")
        scenarios.run(name, table[name], scenarios.stall_shutdown_s(name))
    print(f"rank {RANK}: ok", flush=True)


if __name__ == "__main__":
    main()
