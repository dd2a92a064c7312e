#!/usr/bin/env python3
"""Runs tools/train-demo (argv[1]) for a few epochs and checks what a
newcomer reads: a progress line per epoch, a reasonable test accuracy on N
ranks and on one, images per second, the speed-up, and no line that looks
like a debug message, a warning or an error."""

import re
import subprocess
import sys

EPOCHS = 4
SUSPECT = re.compile(r"error|warn|debug|traceback|exception|fail|\[\d+\]<",
                     re.IGNORECASE)
SUMMARY = re.compile(r"^\s*(\d+) ranks?\s*: test accuracy\s+([\d.]+)%,\s+"
                     r"(\d+) images/s,\s+([\d.]+) s of training$")


def main():
    done = subprocess.run([sys.executable, sys.argv[1], "--epochs",
                           str(EPOCHS)], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=280)
    out = done.stdout
    print(out)
    assert done.returncode == 0, f"train-demo exited with {done.returncode}"
    lines = out.splitlines()
    suspect = [line for line in lines if SUSPECT.search(line)]
    assert not suspect, f"lines that look like debug output or errors: " \
                        f"{suspect}"
    progress = [line for line in lines if re.match(
        rf"^\s+epoch\s+\d+/{EPOCHS} \[[#.]+\] loss [\d.]+, test accuracy", line)]
    assert len(progress) == EPOCHS, f"{len(progress)} progress lines"
    summaries = {}
    for line in lines:
        found = SUMMARY.match(line)
        if found:
            summaries[int(found.group(1))] = (float(found.group(2)),
                                              float(found.group(3)))
    assert sorted(summaries) == [1, 2], f"summaries for {sorted(summaries)}"
    for ranks, (accuracy, rate) in summaries.items():
        assert accuracy >= 80.0, f"{ranks} rank(s): accuracy {accuracy}%"
        assert rate > 0
    assert re.search(r"^speed-up on 2 ranks: [\d.]+x$", out, re.MULTILINE)


if __name__ == "__main__":
    main()
