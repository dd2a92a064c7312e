"""Running a function in the background, as horovod.runner.util.threads
does in Horovod."""

import threading


def in_thread(target, args=(), name=None, daemon=True, silent=False):
    """Starts `target(*args)` on a new thread and returns the thread.

    args: a tuple (for one argument, ``(arg,)``).
    daemon: whether the thread is a daemon (the process does not wait for
        it at exit).
    silent: whether an exception raised by `target` is swallowed instead of
        being reported by threading's excepthook.
    """
    if not isinstance(args, tuple):
        raise ValueError(f"args must be a tuple, not {type(args)}, for a "
                         f"single argument use (arg,)")
    if silent:
        def run(*call_args):
            try:
                target(*call_args)
            except Exception:  # noqa: BLE001 - silent means silent
                pass
    else:
        run = target
    thread = threading.Thread(target=run, args=args, name=name)
    thread.daemon = daemon
    thread.start()
    return thread
