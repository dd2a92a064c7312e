"""horovodrun: starts a Horovod job.

It spawns the ranks (local ones directly, remote ones through a launch
command, ssh by default), serves them the rendezvous store they find each
other through (tools/horovodrun/PROTOCOL.md), forwards their output with a
rank prefix, forwards Ctrl-C and SIGTERM, tears the job down when a rank
fails, and removes what the job left in /dev/shm and /tmp.

One module a job: command_line (flags), hosts and placement (who runs
where), network (the service's address), protocol and rendezvous (the
store), environment and remote (what a rank is told, how a remote one
starts), processes (one rank's process and output), job (a fixed set of
ranks under supervision), mpi (--mpi), cleanup, launch (the dispatch).
The `horovodrun` console script and bin/horovodrun are thin entry points
over main().
"""

import sys


def main(argv=None, tools_dir=None):
    """Runs horovodrun with `argv` (default: the process's arguments) and
    returns its exit status. `tools_dir`: where horovod-info is (default:
    the package's bin/)."""
    from horovod.runner.launch import run_command_line
    from horovod.tools import tools_dir as package_tools_dir
    return run_command_line(sys.argv[1:] if argv is None else argv,
                            tools_dir or package_tools_dir())
