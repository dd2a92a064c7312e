#!/usr/bin/env python3
"""The flight recorder through horovodrun, on by default: each scenario of
flight_job runs in a job whose log folder (HOROVOD_LOG_DIR) is fresh, and
the dumps there and horovodrun's summary are checked.

    check_flight.py <horovodrun> <flight_job> <work folder> stall|signal|kill
"""
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

HOROVODRUN, JOB, WORK, SCENARIO = sys.argv[1:5]
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what)


def fresh_log_dir():
    folder = os.path.join(WORK, SCENARIO)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    return folder


def dumps_in(folder):
    out = {}
    for path in glob.glob(os.path.join(folder, "flight-rank*.json")):
        with open(path) as f:
            dump = json.load(f)  # well-formed JSON, or the test fails here
        out[dump["rank"]] = dump
    return out


def entries(dump, name=None):
    return [e for s in dump["sets"] for e in s["entries"]
            if name is None or e["name"] == name]


def summary_of(out):
    lines = out.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("horovodrun: flight recorder: dumps of"):
            return "\n".join(lines[i:])
    return ""


def run(np, extra, log_dir, timeout=120):
    env = dict(os.environ, HOROVOD_LOG_DIR=log_dir)
    cmd = [HOROVODRUN, "-np", str(np), "--start-timeout", "30"] + extra + \
        [JOB, SCENARIO]
    print(" ".join(cmd), flush=True)
    return subprocess.Popen(cmd, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, env=env, text=True)


def finish(proc, timeout=120):
    out, _ = proc.communicate(timeout=timeout)
    print(out)
    return out


def check_entry_fields(e):
    for key in ("seq", "name", "collective", "dtype", "op", "bytes",
                "reducer", "transport", "state", "peer", "submitted_ns",
                "negotiated_ns", "posted_ns", "done_ns"):
        check(key in e, f"entry without {key}: {e}")


def stall():
    folder = fresh_log_dir()
    proc = run(2, ["--stall-check-warning-time-seconds", "1",
                   "--stall-check-shutdown-time-seconds", "3"], folder)
    out = finish(proc)
    for r in range(2):
        check(re.search(r"^\[%d\]<stderr>:\[horovod rank %d flight\] flight "
                        r"recorder dump \(stall warning\)" % (r, r), out, re.M),
              f"rank {r} logged no dump on the stall warning")
    dumps = dumps_in(folder)
    check(sorted(dumps) == [0, 1], f"dumps of ranks {sorted(dumps)}, not 0-1")
    if 0 in dumps:
        waiting = entries(dumps[0], "step.3")
        check(waiting and waiting[-1]["state"] == "negotiating",
              f"rank 0's dump does not hold step.3 in negotiation: {waiting}")
        done = entries(dumps[0], "step.2")
        check(done and done[-1]["state"] == "done" and
              done[-1]["reducer"] and done[-1]["transport"] and
              0 < done[-1]["submitted_ns"] <= done[-1]["negotiated_ns"] <=
              done[-1]["posted_ns"] <= done[-1]["done_ns"],
              f"step.2 on rank 0 lacks its stages: {done}")
        for e in entries(dumps[0]):
            check_entry_fields(e)
    if 1 in dumps:
        check(not entries(dumps[1], "step.3"),
              "rank 1 recorded step.3, which it skipped")
    summary = summary_of(out)
    check(summary, "horovodrun printed no flight recorder summary")
    check(re.search(r"behind: rank 1: rank 0 waits in allreduce 'step\.3' "
                    r"for it", summary),
          "the summary does not name rank 1 behind step.3 with rank 0 "
          "waiting for it")
    check(re.search(r"rank 0: in allreduce 'step\.3', negotiating .*waiting "
                    r"for rank 1", summary),
          "the summary does not say rank 0 waits for rank 1")
    check(re.search(r"rank 1: no op in flight; last done: allreduce "
                    r"'step\.2'", summary),
          "the summary does not place rank 1 after step.2")


def signal_scenario():
    folder = fresh_log_dir()
    proc = run(2, [], folder)
    pids, lines = {}, []
    deadline = time.monotonic() + 60
    while len(pids) < 2 and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        m = re.search(r"<stdout>:rank (\d+): pid (\d+)", line)
        if m:
            pids[int(m.group(1))] = int(m.group(2))
    check(len(pids) == 2, f"ranks printed pids {pids}")
    time.sleep(0.5)  # some ticks done
    for pid in pids.values():
        os.kill(pid, signal.SIGUSR1)
    out = "".join(lines) + finish(proc)
    check(proc.returncode == 0,
          f"the job did not go on after SIGUSR1 ({proc.returncode})")
    dumps = dumps_in(folder)
    check(sorted(dumps) == [0, 1], f"dumps of ranks {sorted(dumps)}, not 0-1")
    for r, dump in dumps.items():
        check(dump["reason"] == "SIGUSR1", f"rank {r}'s reason: "
              f"{dump['reason']}")
        check(dump["pid"] == pids.get(r), f"rank {r}'s dump names pid "
              f"{dump['pid']}")
        ticks = entries(dump, "tick")
        check(any(e["state"] == "done" and e["op"] == "MIN" and
                  e["dtype"] == "int32" and e["bytes"] == 4 for e in ticks),
              f"rank {r}'s dump holds no finished 'tick': {ticks[-3:]}")
        check(len(ticks) <= dump["sets"][0]["capacity"],
              "more entries than the ring holds")
    check(re.search(r"^horovodrun: flight recorder: dumps of ranks 0-1 "
                    r"\(SIGUSR1\)", out, re.M),
          "horovodrun did not summarise the SIGUSR1 dumps")


def kill():
    folder = fresh_log_dir()
    proc = run(3, [], folder)
    out = finish(proc)
    check(proc.returncode != 0, "the job succeeded with a rank killed")
    dumps = dumps_in(folder)
    check(sorted(dumps) == [0, 1], f"dumps of ranks {sorted(dumps)}, not the "
          "survivors 0-1")
    for r, dump in dumps.items():
        check(dump["reason"].startswith("failure: ") and "rank 2" in
              dump["reason"], f"rank {r}'s reason: {dump['reason']}")
        blamed = [e for e in entries(dump) if e["peer"] == 2]
        check(blamed, f"rank {r}'s dump blames no entry on rank 2")
    summary = summary_of(out)
    check(re.search(r"behind: rank 2: ranks 0-1 wait in allreduce "
                    r"'loop\.20' for it \(rank 2 left no dump", summary),
          "the summary does not name rank 2 behind loop.20")
    check("no dump from rank 2" in summary,
          "the summary does not say rank 2 left no dump")


{"stall": stall, "signal": signal_scenario, "kill": kill}[SCENARIO]()
print(f"flight {SCENARIO} checks:", "FAILED" if failures else "passed")
sys.exit(1 if failures else 0)
