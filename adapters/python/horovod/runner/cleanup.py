"""Removes what a job left behind: its shared memory segments and socket
folder, on this host directly and on the remote hosts it used."""

import glob
import os
import shlex
import shutil
import subprocess

from horovod.runner.hosts import is_local
from horovod.runner.log import log, vlog


def remove_job_files(job_id, hosts, launcher):
    patterns = [f"/dev/shm/hvd-{job_id}-*", f"/tmp/hvd-{job_id}"]
    for path in [p for pattern in patterns for p in glob.glob(pattern)]:
        vlog(f"removing {path}")
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            try:
                os.unlink(path)
            except OSError:
                pass
    command = "rm -rf " + " ".join(patterns)
    for host in hosts:
        if is_local(host):
            continue
        argv = launcher.argv(host, command)
        vlog(f"cleaning up on {host}: {shlex.join(argv)}")
        try:
            subprocess.run(argv, stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=10)
        except (OSError, subprocess.TimeoutExpired) as e:
            log(f"could not clean up on {host}: {e}")
