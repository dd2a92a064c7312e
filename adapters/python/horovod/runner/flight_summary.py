"""The flight recorder's dumps after a job: each rank of a job horovodrun
starts writes them to the job's log folder (HOROVOD_LOG_DIR) when it
stalls, fails, gets SIGUSR1 or a fatal signal. Once the job has ended,
horovodrun reads those written during the job and prints one screen: which
ranks are behind, on which op, and whom each rank waits for."""

import glob
import json
import os
import shutil
import tempfile

from horovod.runner.log import log

PENDING = ("negotiating", "queued", "running")
MAX_LINES = 16  # rank groups shown; the rest are counted


def job_log_dir(job_id):
    """The folder a job's ranks write diagnostics to: HOROVOD_LOG_DIR when
    the user set one, else a folder of this job's own."""
    configured = os.environ.get("HOROVOD_LOG_DIR")
    if configured:
        return os.path.abspath(configured), False
    root = os.path.join(tempfile.gettempdir(), f"horovod-logs-{os.getuid()}")
    return os.path.join(root, f"job-{job_id}"), True


def load_dumps(folder, since=0.0):
    """{rank: dump} of the dumps in `folder` written at or after `since`
    (seconds since the epoch); a rank's latest when it wrote several."""
    dumps = {}
    for path in glob.glob(os.path.join(folder, "flight-rank*.json")):
        try:
            if os.path.getmtime(path) < since:
                continue
            with open(path) as f:
                dump = json.load(f)
        except (OSError, ValueError):
            continue
        if dump.get("format") != "horovod-flight-recorder":
            continue
        dump["path"] = path
        rank = dump["rank"]
        if rank not in dumps or dump["time_ns"] > dumps[rank]["time_ns"]:
            dumps[rank] = dump
    return dumps


def ranks_text(ranks):
    ranks = sorted(ranks)
    if not ranks:
        return "no rank"
    spans, start = [], ranks[0]
    for prev, cur in zip(ranks, ranks[1:] + [None]):
        if cur != prev + 1:
            spans.append(str(start) if start == prev else f"{start}-{prev}")
            start = cur
    return ("rank " if len(ranks) == 1 else "ranks ") + ", ".join(spans)


def op_text(entry, set_id):
    where = f"{entry['collective']} '{entry['name']}'"
    return where if set_id == 0 else f"{where} (process set {set_id})"


def _pending(dump):
    """(set id, members, entry) of each op in flight in `dump`."""
    for s in dump["sets"]:
        for e in s["entries"]:
            if e["state"] in PENDING:
                yield s["id"], s["ranks"], e


def _last_done(dump):
    done = [(e["done_ns"], s["id"], e) for s in dump["sets"]
            for e in s["entries"] if e["state"] == "done"]
    if not done:
        return None
    _, set_id, e = max(done, key=lambda d: d[0])
    return op_text(e, set_id)


def summarise(dumps, size):
    """The summary's lines (without horovodrun's prefix)."""
    # Who holds each op in flight, per (set, name).
    holders = {}
    for rank, dump in dumps.items():
        for set_id, members, e in _pending(dump):
            holders.setdefault((set_id, e["name"]), set()).add(rank)

    # For each rank: its oldest op in flight and whom it waits for there.
    stalls = []  # (submitted_ns, rank, set, entry, waits_for)
    positions = {}
    for rank, dump in sorted(dumps.items()):
        pending = sorted(_pending(dump), key=lambda p: p[2]["submitted_ns"])
        if not pending:
            positions[rank] = ("no op in flight", ())
            continue
        set_id, members, e = pending[0]
        if e["peer"] >= 0:
            waits = (e["peer"],)
        elif e["state"] == "negotiating":
            waits = tuple(r for r in members
                          if r not in holders[(set_id, e["name"])])
        else:
            waits = ()
        age = (dump["time_ns"] - e["submitted_ns"]) / 1e9
        where = f"in {op_text(e, set_id)}, {e['state']}"
        if e["reducer"]:
            where += f" ({e['reducer']} over {e['transport']})"
        positions[rank] = (where, waits, age)
        if waits:
            stalls.append((e["submitted_ns"], rank, set_id, e, waits))

    lines = []
    # Behind: the ranks the oldest waiting op waits for.
    if stalls:
        _, _, set_id, e, waits = min(stalls, key=lambda s: s[0])
        waiting = sorted({s[1] for s in stalls if s[2] == set_id and
                          s[3]["name"] == e["name"]})
        missing = [r for r in waits if r not in dumps]
        lines.append(
            f"behind: {ranks_text(waits)}: {ranks_text(waiting)} wait"
            f"{'s' if len(waiting) == 1 else ''} in {op_text(e, set_id)} "
            f"for {'it' if len(waits) == 1 else 'them'}"
            + (f" ({ranks_text(missing)} left no dump: dead or killed?)"
               if missing else ""))
    else:
        lines.append("no rank waits for another in what was recorded")

    # One line per group of ranks in the same place.
    groups = {}
    for rank, pos in positions.items():
        where, waits = pos[0], pos[1]
        groups.setdefault((where, waits), []).append(
            (rank, pos[2] if len(pos) > 2 else 0.0))
    shown = sorted(groups.items(), key=lambda g: min(r for r, _ in g[1]))
    for (where, waits), members in shown[:MAX_LINES]:
        ranks = [r for r, _ in members]
        age = max(a for _, a in members)
        text = f"{ranks_text(ranks)}: {where}"
        if age:
            text += f" for {age:.1f} s"
        if waits:
            text += f", waiting for {ranks_text(waits)}"
        if len(ranks) == 1:
            last = _last_done(dumps[ranks[0]])
            if last:
                text += f"; last done: {last}"
        lines.append(text)
    if len(shown) > MAX_LINES:
        lines.append(f"... and {len(shown) - MAX_LINES} more groups of ranks")
    silent = [r for r in range(size) if r not in dumps]
    if silent:
        lines.append(f"no dump from {ranks_text(silent)}")
    return lines


def report(folder, size, since, own_folder, what=None):
    """Prints the summary of the dumps written since `since`, if any; a
    folder of the job's own is removed when it stayed empty. `what` names
    the ranks' world in an elastic job."""
    try:
        dumps = load_dumps(folder, since)
        if dumps:
            reasons = sorted({d["reason"].split(":")[0] for d in dumps.values()})
            of = f" of {what}" if what else ""
            log(f"flight recorder: dumps of {ranks_text(dumps)}{of} "
                f"({', '.join(reasons)}) in {folder}:")
            for line in summarise(dumps, size):
                log(f"  {line}")
        else:
            remove_if_empty(folder, own_folder)
    except Exception as e:  # a summary must never mask the job's own end
        log(f"flight recorder: could not summarise the dumps in {folder}: {e}")


def remove_if_empty(folder, own_folder):
    """Removes a job's own log folder that nothing was written to."""
    if own_folder and os.path.isdir(folder) and not os.listdir(folder):
        shutil.rmtree(folder, ignore_errors=True)
