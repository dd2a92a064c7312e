"""The transports an elastic job may use. Each new world initialises the
transports again inside the workers that survive; a transport that cannot
be is refused before any worker starts, naming it and where it was
selected. The selection is horovod-info's, which resolves the
configuration as the ranks do (file, HOROVOD_* overrides)."""

import json
import os
import subprocess

from horovod.runner.log import Fatal, vlog

CANNOT_REBUILD = {
    "mpi": "a process initialises MPI only once and MPI's world is the one "
           "mpirun started, so it cannot follow a new membership",
}
REBUILT = "shm, tcp, gloo, ucx or ofi"


def selected_transports(info, config):
    """[(role, name, source)]: the transport each role uses."""
    argv = [info, "--json"] + (["--config", config] if config else [])
    try:
        done = subprocess.run(argv, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, timeout=60)
        report = json.loads(done.stdout)
    except (OSError, ValueError, subprocess.TimeoutExpired) as e:
        raise Fatal(f"cannot read the transports selected ({info}: "
                    f"{e})") from None
    if "error" in report:
        raise Fatal(report["error"])
    selected = []
    for s in report["plugins"]["selected"]:
        if not s["role"].startswith("transport."):
            continue
        candidates = s["candidates"]
        used = [c for c in candidates if c.get("used")] or \
            [c for c in candidates if c["loads"]][:1]
        selected += [(s["role"], c["name"], s["source"]) for c in used]
    return selected


def check_transports(tools_dir, config):
    """Raises Fatal when the job's configuration selects a transport that
    cannot be initialised again in a new world."""
    info = os.path.join(tools_dir, "horovod-info") if tools_dir else ""
    if not os.access(info, os.X_OK):
        vlog(f"{info or 'horovod-info'} not found: the transports are not "
             f"checked for elastic use")
        return
    for role, name, source in selected_transports(info, config):
        why = CANNOT_REBUILD.get(name)
        if why:
            raise Fatal(f"an elastic job cannot use the '{name}' transport "
                        f"({role}, from {source}): {why}; select {REBUILT}")
