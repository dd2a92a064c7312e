"""horovodrun's elastic mode (--host-discovery-script, --min-np,
--max-np): discovery (where the job may run), host_manager (which hosts it
uses now: blacklist and cooldown), transports (those that can follow a
new world), rendezvous (one world a round, and the
workers' requests), driver (the job's life), worker (the workers' side, for
hvd.init and the elastic State)."""

import secrets

from horovod.runner.elastic.discovery import FixedDiscovery, ScriptDiscovery
from horovod.runner.elastic.driver import ElasticJob
from horovod.runner.elastic.host_manager import HostManager
from horovod.runner.elastic.transports import check_transports
from horovod.runner.hosts import hosts_from_args
from horovod.runner.job import new_job_id
from horovod.runner.log import Fatal
from horovod.runner.remote import Launcher


def is_elastic(args):
    return (args.host_discovery_script is not None or
            args.min_np is not None or args.max_np is not None)


def run_elastic(args, tools_dir=None):
    """Runs an elastic job to its end; returns horovodrun's exit status.
    `tools_dir` holds horovod-info, which says what transports the job's
    configuration selects."""
    if args.min_np is not None and args.min_np < 1:
        raise Fatal("--min-np must be at least 1")
    if args.max_np is not None and args.min_np is not None and \
            args.max_np < args.min_np:
        raise Fatal(f"--max-np {args.max_np} is below --min-np "
                    f"{args.min_np}")
    if args.host_discovery_script:
        if args.hosts or args.hostfile:
            raise Fatal("give either --host-discovery-script or -H / "
                        "--hostfile, not both")
        discovery = ScriptDiscovery(args.host_discovery_script,
                                    args.slots_per_host)
    else:
        discovery = FixedDiscovery(hosts_from_args(args))
    cooldown = args.blacklist_cooldown_range
    if cooldown is not None and not 0 < cooldown[0] <= cooldown[1]:
        raise Fatal("--blacklist-cooldown-range: expected 0 < LOW <= HIGH")
    check_transports(tools_dir, args.config)
    job = ElasticJob(args, HostManager(discovery, cooldown), new_job_id(),
                     secrets.token_bytes(32), Launcher(args))
    return job.run()
