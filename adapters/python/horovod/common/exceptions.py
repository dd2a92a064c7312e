"""Exceptions of Horovod's Python API, and the core's statuses turned
into them."""

from horovod.common import _capi

_NOT_INITIALIZED = "Horovod has not been initialized; use hvd.init()."

# Caller's mistakes found before the op starts: ValueError, as Horovod's
# bindings raise for invalid arguments.
_VALUE_ERRORS = {_capi.ERR_INVALID_ARGUMENT, _capi.ERR_UNSUPPORTED,
                 _capi.ERR_MISMATCH, _capi.ERR_CONFIG, _capi.ERR_VERSION,
                 _capi.ERR_NOT_FOUND}


class HorovodInternalError(RuntimeError):
    """A collective failed inside the runtime: ranks disagreed about it, a
    rank failed, or the runtime shut down while it was pending."""


class HostsUpdatedInterrupt(RuntimeError):
    """The set of hosts changed (elastic jobs); kept for API compatibility."""

    def __init__(self, skip_sync):
        super().__init__("hosts updated")
        self.skip_sync = skip_sync


def raise_for_status(status, what, message=None):
    """Raises the exception Horovod raises for a failed call `what`."""
    text = message if message is not None else _capi.last_error()
    text = text or _capi.status_name(status)
    if status in _VALUE_ERRORS:
        raise ValueError(text)
    if status == _capi.ERR_SHUT_DOWN and "not initialised" in text:
        raise ValueError(_NOT_INITIALIZED)
    raise HorovodInternalError(text)
