"""horovodrun's command line: Horovod's own flags (-np, -H, --hostfile,
--start-timeout, the timeline, stall check and autotune flags ...) and this
launcher's (--config, --launcher-command, --mpi)."""

import argparse

from horovod.runner.log import PROG, Fatal
from horovod.runner.remote import DEFAULT_LAUNCHER


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog=PROG, description="Launch a Horovod job.",
        epilog="Ranks are placed on the hosts in order, filling each host's "
               "slots. Remote ranks start through the launcher command, a "
               "template in which {host} is replaced by the host name and "
               "{command} by a shell command line (appended when the "
               "template has no {command}); default: '" +
               DEFAULT_LAUNCHER.replace("{ssh_options}", "") + "'. "
               "Example for network namespaces: "
               "--launcher-command 'ip netns exec ns-{host} sh -c {command}'. "
               "The start timeout applies once a rank has reached the "
               "rendezvous: a command that never uses it is not bound by it.")
    p.add_argument("-np", "--num-proc", dest="np", type=int,
                   help="number of ranks (default: all slots of the hosts)")
    p.add_argument("-H", "--hosts", help="host:slots,... (default: "
                   "localhost:NP)")
    p.add_argument("-hostfile", "--hostfile",
                   help="file of hosts, one per line: 'host slots=N' or "
                        "'host:N'")
    p.add_argument("--config", "--config-file", dest="config",
                   help="horovod.toml for every rank (HOROVOD_CONFIG)")
    p.add_argument("--network-interfaces", "--network-interface",
                   dest="network_interfaces",
                   help="comma-separated interfaces for the job's traffic "
                        "and the rendezvous service")
    p.add_argument("--start-timeout", type=float,
                   help="seconds for all ranks to reach the rendezvous "
                        "(default: HOROVOD_START_TIMEOUT or 30)")
    p.add_argument("--cache-capacity", type=int,
                   help="responses the response cache keeps; 0 turns it off "
                        "(HOROVOD_CACHE_CAPACITY)")
    p.add_argument("--autotune", action="store_true",
                   help="tune the fusion threshold, cycle time and reducer "
                        "over the first steps (HOROVOD_AUTOTUNE=1)")
    p.add_argument("--autotune-log-file",
                   help="CSV file of what the autotuner tried, written by "
                        "rank 0 (HOROVOD_AUTOTUNE_LOG)")
    p.add_argument("--timeline-filename",
                   help="Chrome trace of every tensor's phases, written by "
                        "rank 0 (HOROVOD_TIMELINE; DYNAMIC: only once "
                        "started at run time)")
    p.add_argument("--timeline-mark-cycles", action="store_true",
                   help="mark negotiation cycles in the timeline "
                        "(HOROVOD_TIMELINE_MARK_CYCLES=1)")
    p.add_argument("--no-stall-check", action="store_true",
                   help="do not warn about tensors only some ranks submitted "
                        "(HOROVOD_STALL_CHECK_DISABLE=1)")
    p.add_argument("--stall-check-warning-time-seconds", type=float,
                   help="seconds a tensor may wait for the other ranks "
                        "before every rank warns (default 60; "
                        "HOROVOD_STALL_CHECK_TIME_SECONDS)")
    p.add_argument("--stall-check-shutdown-time-seconds", type=float,
                   help="seconds a stalled tensor may wait before the job "
                        "fails (default 1800; 0: never; "
                        "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS)")
    p.add_argument("--log-level",
                   choices=["trace", "debug", "info", "warning", "error",
                            "fatal"],
                   help="least severe messages the ranks log "
                        "(HOROVOD_LOG_LEVEL; default warning)")
    p.add_argument("--log-hide-timestamp", action="store_true",
                   help="leave the time out of the ranks' log lines "
                        "(HOROVOD_LOG_HIDE_TIME=1)")
    p.add_argument("--output-filename",
                   help="also write each rank's output to "
                        "DIR/rank.N/stdout and DIR/rank.N/stderr")
    p.add_argument("--launcher-command",
                   help="template to start a remote rank (default: "
                        "HOROVOD_LAUNCHER_COMMAND, else ssh)")
    p.add_argument("-p", "--ssh-port", type=int, help="ssh port")
    p.add_argument("-i", "--ssh-identity-file", help="ssh identity file")
    p.add_argument("--verbose", action="store_true",
                   help="log what horovodrun does")
    p.add_argument("--mpi", action="store_true",
                   help="start the ranks with Open MPI's mpirun on the "
                        "hosts and slots given, passing on the HOROVOD_ "
                        "environment (the ranks bootstrap through PMIx)")
    p.add_argument("--mpi-args",
                   help="more mpirun options with --mpi, one string "
                        "(e.g. '--mca pml ob1 --mca btl self,vader')")
    elastic = p.add_argument_group(
        "elastic", "A job whose workers may come and go: it runs while at "
        "least --min-np slots are usable, on the hosts the discovery script "
        "prints (host:slots lines) or those of -H, less the hosts "
        "blacklisted after a failure.")
    elastic.add_argument("--min-np", "--min-num-proc", dest="min_np",
                         type=int, help="fewest ranks the job runs with "
                         "(default: -np)")
    elastic.add_argument("--max-np", "--max-num-proc", dest="max_np",
                         type=int, help="most ranks the job runs with")
    elastic.add_argument("--slots-per-host", "--slots", dest="slots_per_host",
                         type=int, default=1,
                         help="slots of a discovered host printed without "
                         "':slots' (default 1)")
    elastic.add_argument("--host-discovery-script",
                         help="command printing the usable hosts, one "
                         "host:slots a line; polled every second")
    elastic.add_argument("--elastic-timeout", type=float, default=600.0,
                         help="seconds the job may wait for --min-np slots "
                         "before it ends (default 600)")
    elastic.add_argument("--reset-limit", type=int,
                         help="most times the job may be reset to a new "
                         "world (default: no limit)")
    elastic.add_argument("--blacklist-cooldown-range", type=float, nargs=2,
                         metavar=("LOW", "HIGH"),
                         help="seconds a failed host stays blacklisted: "
                         "LOW doubling with each failure, at most HIGH "
                         "(default: for good)")
    p.add_argument("--check-build", action="store_true",
                   help="print how Horovod was built (horovod-info) and exit")
    p.add_argument("command", nargs=argparse.REMAINDER,
                   help="the program to run on every rank, and its arguments")
    return p.parse_args(argv)


def parse_seconds(text, what):
    """'30', '30s', '500ms', '2m' -> seconds."""
    units = (("ms", 1e-3), ("us", 1e-6), ("s", 1.0), ("m", 60.0),
             ("h", 3600.0))
    text = text.strip()
    scale = 1.0
    for suffix, factor in units:
        if text.endswith(suffix):
            text, scale = text[:-len(suffix)], factor
            break
    try:
        return float(text) * scale
    except ValueError:
        raise Fatal(f"{what}: '{text}' is not a number of seconds") from None
