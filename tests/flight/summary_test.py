#!/usr/bin/env python3
"""horovodrun's flight recorder summary from hand-made dumps: eight ranks,
six waiting in one allreduce for a rank that went on to a barrier and one
that submitted nothing, fit in a few lines naming both. Usage:
summary_test.py PACKAGE_ROOT, the folder holding the horovod package."""
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, sys.argv[1])
from horovod.runner import flight_summary  # noqa: E402

S = 10**9


def entry(name, state, submitted, collective="allreduce", peer=-1):
    return {"seq": 1, "name": name, "collective": collective,
            "dtype": "float32", "op": "SUM", "bytes": 4, "reducer": "",
            "transport": "", "state": state, "peer": peer,
            "submitted_ns": submitted, "negotiated_ns": 0, "posted_ns": 0,
            "done_ns": submitted + 1 if state == "done" else 0}


def dump(rank, entries):
    return {"format": "horovod-flight-recorder", "version": 1, "rank": rank,
            "size": 8, "pid": 100 + rank, "host": "h", "reason":
            "stall warning", "time_ns": 50 * S,
            "sets": [{"id": 0, "ranks": list(range(8)), "capacity": 64,
                      "recorded": len(entries), "entries": entries}]}


dumps = {r: dump(r, [entry("grad.1", "done", 1 * S),
                     entry("grad.2", "negotiating", 10 * S)])
         for r in (0, 1, 2, 3, 4, 5)}
dumps[6] = dump(6, [entry("grad.1", "done", 1 * S),
                    entry("barrier.0", "negotiating", 11 * S, "barrier")])
dumps[7] = dump(7, [entry("grad.1", "done", 1 * S)])

failures = []
with tempfile.TemporaryDirectory() as folder:
    for r, d in dumps.items():
        with open(os.path.join(folder, f"flight-rank{r}-pid{100 + r}.json"),
                  "w") as f:
            json.dump(d, f)
    stale = os.path.join(folder, "flight-rank0-pid1.json")
    with open(stale, "w") as f:
        json.dump(dump(0, []), f)
    os.utime(stale, (time.time() - 3600, time.time() - 3600))
    loaded = flight_summary.load_dumps(folder, since=time.time() - 600)
    if sorted(loaded) != list(range(8)) or loaded[0]["pid"] != 100:
        failures.append(f"loaded {sorted(loaded)}, rank 0 pid "
                        f"{loaded.get(0, {}).get('pid')}: a stale dump counted")
lines = flight_summary.summarise(loaded, 9)
text = "\n".join(lines)
print(text)
want = [
    "behind: ranks 6-7: ranks 0-5 wait in allreduce 'grad.2' for them",
    "ranks 0-5: in allreduce 'grad.2', negotiating for 40.0 s, waiting for "
    "ranks 6-7",
    "rank 6: in barrier 'barrier.0', negotiating for 39.0 s, waiting for "
    "ranks 0-5, 7; last done: allreduce 'grad.1'",
    "rank 7: no op in flight; last done: allreduce 'grad.1'",
    "no dump from rank 8",
]
for line in want:
    if line not in lines:
        failures.append(f"missing: {line}")
if len(lines) != len(want):
    failures.append(f"{len(lines)} lines, expected {len(want)}")
for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)
