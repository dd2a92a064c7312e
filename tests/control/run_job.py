#!/usr/bin/env python3
"""Runs one horovodrun job of control-job and checks how it ended.

  run_job.py HOROVODRUN STATUS PATTERN... -- HOROVODRUN-ARGS...

STATUS is "zero" or "nonzero"; each PATTERN (a regular expression) must
match the job's combined output.
"""

import re
import subprocess
import sys


def main(argv):
    horovodrun, status = argv[0], argv[1]
    split = argv.index("--")
    patterns, args = argv[2:split], argv[split + 1:]
    job = subprocess.run([horovodrun] + args, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, timeout=120)
    output = job.stdout.decode(errors="replace")
    print(output)
    ok = True
    if (job.returncode == 0) != (status == "zero"):
        print(f"run_job: horovodrun exited with {job.returncode}, "
              f"expected {status}")
        ok = False
    for pattern in patterns:
        if not re.search(pattern, output):
            print(f"run_job: no match in the output for: {pattern}")
            ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
