#!/usr/bin/env python3
"""horovodrun's timeline, stall inspector and logging flags become the
ranks' HOROVOD_ variables (the jobs in this folder run with some of them;
this checks every one). Usage: horovodrun_flags_test.py PACKAGE_ROOT, the
folder holding the horovod package."""
import os
import sys

sys.path.insert(0, sys.argv[1])
from horovod.runner.command_line import parse_args  # noqa: E402
from horovod.runner.environment import diagnostics_env  # noqa: E402

args = parse_args([
    "-np", "2", "--timeline-filename", "t.json", "--timeline-mark-cycles",
    "--no-stall-check", "--stall-check-warning-time-seconds", "30",
    "--stall-check-shutdown-time-seconds", "90.5", "--log-level", "debug",
    "--log-hide-timestamp", "true"])
env = diagnostics_env(args)
want = {
    "HOROVOD_TIMELINE": os.path.abspath("t.json"),
    "HOROVOD_TIMELINE_MARK_CYCLES": "1",
    "HOROVOD_STALL_CHECK_DISABLE": "1",
    "HOROVOD_STALL_CHECK_TIME_SECONDS": "30",
    "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS": "90.5",
    "HOROVOD_LOG_LEVEL": "debug",
    "HOROVOD_LOG_HIDE_TIME": "1",
}
failures = [f"{k}: {env.get(k)!r}, expected {v!r}"
            for k, v in want.items() if env.get(k) != v]
dynamic = diagnostics_env(parse_args(
    ["--timeline-filename", "DYNAMIC", "true"]))
if dynamic != {"HOROVOD_TIMELINE": "DYNAMIC"}:
    failures.append(f"DYNAMIC: {dynamic}")
if diagnostics_env(parse_args(["true"])):
    failures.append("variables set without flags")
for f in failures:
    print("FAIL:", f)
print("horovodrun flags:", "FAILED" if failures else "passed")
sys.exit(1 if failures else 0)
