"""horovodrun's entry: parse the command line and run what it asks for, a
report of the build, a job under mpirun, or a job of horovodrun's own."""

import os
import subprocess
import sys

from horovod.runner.command_line import parse_args
from horovod.runner.elastic import is_elastic, run_elastic
from horovod.runner.job import Job
from horovod.runner.log import Fatal, log, set_verbose
from horovod.runner.mpi import run_mpi


def check_build(tools_dir):
    info = os.path.join(tools_dir, "horovod-info")
    if not os.access(info, os.X_OK):
        raise Fatal(f"--check-build: {info} not found (it is installed next "
                    f"to horovodrun)")
    result = subprocess.run([info], stdout=subprocess.PIPE)
    sys.stdout.buffer.write(result.stdout)
    sys.stdout.flush()
    return result.returncode


def run_command_line(argv, tools_dir):
    """Returns horovodrun's exit status. `tools_dir` holds horovod-info."""
    args = parse_args(argv)
    set_verbose(args.verbose)
    try:
        if args.check_build:
            return check_build(tools_dir)
        if args.mpi:
            return run_mpi(args)
        if is_elastic(args):
            return run_elastic(args, tools_dir)
        return Job(args).run()
    except Fatal as e:
        log(f"error: {e}")
        return 1
