#!/usr/bin/env python3
"""horovodrun's timeline, stall inspector and logging flags become the
ranks' HOROVOD_ variables (the jobs in this folder run with some of them;
this checks every one)."""
import importlib.machinery
import importlib.util
import os
import sys

loader = importlib.machinery.SourceFileLoader("horovodrun", sys.argv[1])
spec = importlib.util.spec_from_loader("horovodrun", loader)
horovodrun = importlib.util.module_from_spec(spec)
loader.exec_module(horovodrun)

args = horovodrun.parse_args([
    "-np", "2", "--timeline-filename", "t.json", "--timeline-mark-cycles",
    "--no-stall-check", "--stall-check-warning-time-seconds", "30",
    "--stall-check-shutdown-time-seconds", "90.5", "--log-level", "debug",
    "--log-hide-timestamp", "true"])
env = horovodrun.diagnostics_env(args)
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
dynamic = horovodrun.diagnostics_env(horovodrun.parse_args(
    ["--timeline-filename", "DYNAMIC", "true"]))
if dynamic != {"HOROVOD_TIMELINE": "DYNAMIC"}:
    failures.append(f"DYNAMIC: {dynamic}")
if horovodrun.diagnostics_env(horovodrun.parse_args(["true"])):
    failures.append("variables set without flags")
for f in failures:
    print("FAIL:", f)
print("horovodrun flags:", "FAILED" if failures else "passed")
sys.exit(1 if failures else 0)
