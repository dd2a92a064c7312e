#!/usr/bin/env python3
"""Runs timeline_job under horovodrun with the timeline on and checks both
traces it leaves: valid Chrome trace JSON, one row per tensor, every row's
spans well nested and in the expected order, negotiation naming the rank
that arrived last, and a trace started at run time holding only what ran
while it was on.

    check_timeline.py <horovodrun> <timeline_job> <config> <np> <work dir>
"""
import json
import os
import subprocess
import sys

HOROVODRUN, JOB, CONFIG, NP, WORK = sys.argv[1:6]
NP = int(NP)
STATIC = os.path.join(WORK, "static.json")
DYNAMIC = os.path.join(WORK, "dynamic.json")
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what)


def load(path):
    with open(path) as f:
        doc = json.load(f)
    check(isinstance(doc.get("traceEvents"), list), path + ": no traceEvents")
    return doc["traceEvents"]


def rows_of(events):
    """tid -> row name, from the thread_name metadata."""
    return {e["tid"]: e["args"]["name"] for e in events
            if e.get("ph") == "M" and e.get("name") == "thread_name"}


def spans_by_row(events, rows):
    """Per row: the spans as (name, depth, args) in order of their begin,
    checking the B/E nesting on the way."""
    per_row = {}
    stacks = {}
    ordered = sorted((e for e in events if e.get("ph") in ("B", "E", "i")
                      and e.get("tid", 0) in rows),
                     key=lambda e: e["ts"])  # sorted() is stable
    last_ts = {}
    for e in ordered:
        row = rows[e["tid"]]
        stack = stacks.setdefault(row, [])
        spans = per_row.setdefault(row, [])
        check(e["ts"] >= last_ts.get(row, 0), row + ": time runs backwards")
        last_ts[row] = e["ts"]
        if e["ph"] == "B":
            spans.append([e["name"], len(stack), dict(e.get("args", {}))])
            stack.append(spans[-1])
        elif e["ph"] == "E":
            check(stack, row + ": an end without a begin")
            if stack:
                stack.pop()[2].update(e.get("args", {}))
        else:
            spans.append([e["name"], -1, dict(e.get("args", {}))])
    for row, stack in stacks.items():
        check(not stack, row + ": spans left open: %s" % stack)
    return per_row


def check_rows(label, rows, spans, want, next_prefix):
    """The rows are `want`, plus perhaps rows of the ops that followed the
    trace's stop (`next_prefix`), holding only the arrivals of other ranks
    that got there before rank 0 stopped it."""
    names = set(rows.values())
    check(want <= names, "%s trace rows %s lack %s" % (label, names,
                                                      want - names))
    for name in names - want:
        only_arrivals = all(s[1] < 0 and s[0] == "ARRIVED"
                            for s in spans.get(name, []))
        check(name.startswith(next_prefix) and only_arrivals,
              "%s trace has a row %s: %s" % (label, name, spans.get(name)))


def expect_sequence(row, spans, steps, collective, inner, started=True):
    """Each step: NEGOTIATE_<C> (depth 0, naming the last rank), then <C>
    (depth 0) holding `inner` at depth 1 in order; ARRIVED instants, one
    per rank (`started`: the trace ran before any rank submitted; a trace
    started at run time may miss the first arrivals)."""
    seq = [s for s in spans if s[1] >= 0]
    arrived = [s for s in spans if s[1] < 0 and s[0] == "ARRIVED"]
    low = NP * steps if started else 1
    check(low <= len(arrived) <= NP * steps,
          "%s: %d ARRIVED instants, expected %d" % (row, len(arrived),
                                                     NP * steps))
    want = []
    for _ in range(steps):
        want += [("NEGOTIATE_" + collective, 0), (collective, 0)]
        want += [(name, 1) for name in inner]
    got = [(s[0], s[1]) for s in seq if s[1] <= 1]
    check(got == want, "%s: spans %s, expected %s" % (row, got, want))
    for s in seq:
        if s[0].startswith("NEGOTIATE_"):
            last = s[2].get("last_rank")
            check(isinstance(last, int) and 0 <= last < NP,
                  "%s: negotiation names no last rank: %s" % (row, s[2]))


def main():
    os.makedirs(WORK, exist_ok=True)
    for path in (STATIC, DYNAMIC):
        if os.path.exists(path):
            os.unlink(path)
    cmd = [HOROVODRUN, "-np", str(NP), "--start-timeout", "30",
           "--config", CONFIG, "--timeline-filename", STATIC,
           "--timeline-mark-cycles", JOB, DYNAMIC]
    print(" ".join(cmd), flush=True)
    rc = subprocess.call(cmd)
    check(rc == 0, "the job failed (%d)" % rc)
    if rc != 0:
        return 1

    events = load(STATIC)
    rows = rows_of(events)
    spans = spans_by_row(events, rows)
    check_rows("static", rows, spans, {"static.grouped", "static.single",
                                       "static.bcast", "static.gather"},
               "gap.")
    expect_sequence("static.grouped", spans.get("static.grouped", []), 3,
                    "ALLREDUCE", ["QUEUE", "MEMCPY_IN_FUSION_BUFFER",
                                  "RING_ALLREDUCE",
                                  "MEMCPY_OUT_FUSION_BUFFER"])
    expect_sequence("static.single", spans.get("static.single", []), 3,
                    "ALLREDUCE", ["QUEUE", "RING_ALLREDUCE"])
    expect_sequence("static.bcast", spans.get("static.bcast", []), 3,
                    "BROADCAST", ["QUEUE", "RING_BROADCAST"])
    expect_sequence("static.gather", spans.get("static.gather", []), 3,
                    "ALLGATHER", ["QUEUE", "RING_ALLGATHER"])
    meta = [e for e in events if e.get("ph") == "M"
            and e.get("name") == "process_name"]
    check(meta and meta[0]["args"]["name"] == "horovod rank 0",
          "the process row is not named for rank 0: %s" % meta)
    check(any(e.get("name") == "CYCLE_START" for e in events),
          "no cycle marks with --timeline-mark-cycles")

    events = load(DYNAMIC)
    rows = rows_of(events)
    spans = spans_by_row(events, rows)
    check_rows("dynamic", rows, spans, {"dynamic.grouped", "dynamic.single",
                                        "dynamic.bcast", "dynamic.gather"},
               "after.")
    expect_sequence("dynamic.grouped", spans.get("dynamic.grouped", []), 1,
                    "ALLREDUCE", ["QUEUE", "MEMCPY_IN_FUSION_BUFFER",
                                  "RING_ALLREDUCE",
                                  "MEMCPY_OUT_FUSION_BUFFER"], started=False)
    check(not any(e.get("name") == "CYCLE_START" for e in events),
          "cycle marks though hvd_start_timeline was told not to")
    print("timeline checks:", "FAILED" if failures else "passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
