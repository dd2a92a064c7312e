"""What horovodrun says about itself: messages on stderr prefixed with its
name, the --verbose ones only when asked, and the error it ends with."""

import sys
import threading

PROG = "horovodrun"

_verbose = False
_lock = threading.Lock()


class Fatal(Exception):
    """A user-facing error: printed without a traceback, exit status 1."""


def set_verbose(on):
    global _verbose
    _verbose = on


def log(message):
    with _lock:
        sys.stderr.write(f"{PROG}: {message}\n")
        sys.stderr.flush()


def vlog(message):
    if _verbose:
        log(message)
