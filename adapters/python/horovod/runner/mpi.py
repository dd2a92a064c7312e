"""--mpi: the job is started by Open MPI's mpirun (the ranks find each other
through PMIx, the core's pmix bootstrap), not by horovodrun itself."""

import os
import shlex
import shutil
import signal
import subprocess

from horovod.runner.cleanup import remove_job_files
from horovod.runner.environment import settings_env
from horovod.runner.hosts import hosts_from_args, is_local
from horovod.runner.job import new_job_id
from horovod.runner.log import Fatal, vlog
from horovod.runner.remote import Launcher

# Set by horovodrun for its own ranks; a job under mpirun must not see them
# (the core would look for a rendezvous service that is not there).
RANK_ONLY_ENV = {"HOROVOD_RANK", "HOROVOD_SIZE", "HOROVOD_LOCAL_RANK",
                 "HOROVOD_LOCAL_SIZE", "HOROVOD_CROSS_RANK",
                 "HOROVOD_CROSS_SIZE", "HOROVOD_HOSTNAME",
                 "HOROVOD_RENDEZVOUS_ADDR", "HOROVOD_RENDEZVOUS_PORT",
                 "HOROVOD_SECRET_KEY"}


def mpirun_command(args, hosts, env):
    """The mpirun command line for the hosts and slots given, with -x for
    every HOROVOD_ variable of `env`."""
    mpirun = os.environ.get("HOROVOD_MPIRUN") or shutil.which("mpirun")
    if not mpirun:
        raise Fatal("--mpi: mpirun not found on PATH (install Open MPI, or "
                    "set HOROVOD_MPIRUN)")
    slots = sum(count for _, count in hosts)
    np = args.np if args.np is not None else slots
    if np < 1:
        raise Fatal("-np must be positive")
    argv = [mpirun, "-np", str(np), "-H",
            ",".join(f"{name}:{count}" for name, count in hosts)]
    local_slots = sum(count for name, count in hosts if is_local(name))
    if np > slots or local_slots > (os.cpu_count() or 1):
        argv.append("--oversubscribe")
    for name in sorted(env):
        if name.startswith("HOROVOD_"):
            argv += ["-x", name]
    if args.mpi_args:
        argv += shlex.split(args.mpi_args)
    return argv + args.command


def run_mpi(args):
    """Runs the job under mpirun; returns horovodrun's exit status."""
    if args.launcher_command or args.output_filename:
        raise Fatal("--mpi: --launcher-command and --output-filename are "
                    "mpirun's business (pass its options with --mpi-args)")
    job_id = new_job_id()
    hosts = hosts_from_args(args)
    env = {k: v for k, v in os.environ.items() if k not in RANK_ONLY_ENV}
    env["HOROVOD_JOB_ID"] = job_id
    env.update(settings_env(args))
    if os.geteuid() == 0:
        # Open MPI refuses to run as root unless told twice.
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    argv = mpirun_command(args, hosts, env)
    vlog(f"running {shlex.join(argv)}")
    try:
        proc = subprocess.Popen(argv, env=env)
    except OSError as e:
        raise Fatal(f"--mpi: cannot start {argv[0]}: {e.strerror}") from None
    forward = lambda signum, frame: proc.send_signal(signum)  # noqa: E731
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, forward)
    status = proc.wait()
    remove_job_files(job_id, [name for name, _ in hosts], Launcher(args))
    return status if status >= 0 else 128 - status
