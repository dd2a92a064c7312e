#!/usr/bin/env python3
"""Runs stall_job under horovodrun (3 ranks, info logging without time
stamps) and checks what it logged: every rank's lines name the rank, rank 0
warned about both withheld tensors naming the missing rank, and the job
ended (each rank checks its own failure message).

    check_stall.py <horovodrun> <stall_job> <warn.toml> <shutdown.toml>
"""
import re
import subprocess
import sys

HOROVODRUN, JOB, WARN, SHUTDOWN = sys.argv[1:5]
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what)


# The warning time comes from the flag (the environment overrides both
# configurations).
cmd = [HOROVODRUN, "-np", "3", "--start-timeout", "30", "--log-level",
       "info", "--log-hide-timestamp",
       "--stall-check-warning-time-seconds", "1", JOB, WARN, SHUTDOWN]
print(" ".join(cmd), flush=True)
run = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                     timeout=180)
out = run.stdout.decode(errors="replace")
print(out)
check(run.returncode == 0, "the job failed (%d)" % run.returncode)
for r in range(3):
    check("[%d]<stdout>:rank %d: done" % (r, r) in out,
          "rank %d did not finish its checks" % r)
    check(re.search(r"^\[%d\]<stderr>:\[INFO horovod rank %d\] initialised: "
                    r"rank %d of 3" % (r, r, r), out, re.M),
          "rank %d's log line does not name it (or carries a time)" % r)
warning = re.compile(r"^\[0\]<stderr>:\[WARNING horovod rank 0\] stall "
                     r"inspector: one or more ops.* for more than 1\.0 s",
                     re.M)
check(warning.search(out), "rank 0 logged no stall warning")
for name in ("stalled.fresh", "stalled.cached"):
    check(re.search(r"'%s': missing ranks 1 \(submitted by ranks 0, 2"
                    % re.escape(name), out),
          "no warning names %s and its missing rank" % name)
check("'stuck.y': missing ranks 2" in out, "the shutdown names no tensor")
print("stall checks:", "FAILED" if failures else "passed")
sys.exit(1 if failures else 0)
