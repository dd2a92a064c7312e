"""The HOROVOD_ variables a rank gets: its place in the job, where the
rendezvous service is, and the settings given on horovodrun's command line."""

import os


def settings_env(args):
    """The command line's job-wide settings as HOROVOD_ variables."""
    env = {}
    if args.config:
        env["HOROVOD_CONFIG"] = os.path.abspath(args.config)
    if args.network_interfaces:
        env["HOROVOD_NETWORK_INTERFACES"] = args.network_interfaces
    if args.start_timeout is not None:
        env["HOROVOD_START_TIMEOUT"] = f"{args.start_timeout:g}"
    env.update(diagnostics_env(args))
    return env


def diagnostics_env(args):
    """The timeline, stall inspector and logging flags."""
    env = {}
    if args.timeline_filename:
        env["HOROVOD_TIMELINE"] = (
            args.timeline_filename if args.timeline_filename == "DYNAMIC"
            else os.path.abspath(args.timeline_filename))
    if args.timeline_mark_cycles:
        env["HOROVOD_TIMELINE_MARK_CYCLES"] = "1"
    if args.no_stall_check:
        env["HOROVOD_STALL_CHECK_DISABLE"] = "1"
    if args.stall_check_warning_time_seconds is not None:
        env["HOROVOD_STALL_CHECK_TIME_SECONDS"] = (
            f"{args.stall_check_warning_time_seconds:g}")
    if args.stall_check_shutdown_time_seconds is not None:
        env["HOROVOD_STALL_SHUTDOWN_TIME_SECONDS"] = (
            f"{args.stall_check_shutdown_time_seconds:g}")
    if args.log_level:
        env["HOROVOD_LOG_LEVEL"] = args.log_level
    if args.log_hide_timestamp:
        env["HOROVOD_LOG_HIDE_TIME"] = "1"
    return env


def runtime_env(args):
    """Runtime tuning only horovodrun's own ranks get (not under --mpi)."""
    env = {}
    if args.cache_capacity is not None:
        env["HOROVOD_CACHE_CAPACITY"] = str(args.cache_capacity)
    if args.autotune:
        env["HOROVOD_AUTOTUNE"] = "1"
    if args.autotune_log_file:
        env["HOROVOD_AUTOTUNE_LOG"] = os.path.abspath(args.autotune_log_file)
    return env


def rank_env(placement, size, rendezvous, secret, job_id, args):
    """Everything one rank started by horovodrun is told, as strings."""
    env = {
        "HOROVOD_RANK": placement.rank, "HOROVOD_SIZE": size,
        "HOROVOD_LOCAL_RANK": placement.local_rank,
        "HOROVOD_LOCAL_SIZE": placement.local_size,
        "HOROVOD_CROSS_RANK": placement.cross_rank,
        "HOROVOD_CROSS_SIZE": placement.cross_size,
        "HOROVOD_HOSTNAME": placement.host,
        "HOROVOD_RENDEZVOUS_ADDR": rendezvous.address,
        "HOROVOD_RENDEZVOUS_PORT": rendezvous.port,
        "HOROVOD_SECRET_KEY": secret.hex(),
        "HOROVOD_JOB_ID": job_id,
    }
    env.update(settings_env(args))
    env.update(runtime_env(args))
    return {k: str(v) for k, v in env.items()}
