"""Exceptions of Horovod's Python API."""


class HorovodInternalError(RuntimeError):
    """A collective failed inside the runtime: ranks disagreed about it, a
    rank failed, or the runtime shut down while it was pending."""


class HostsUpdatedInterrupt(RuntimeError):
    """The set of hosts changed (elastic jobs); kept for API compatibility."""

    def __init__(self, skip_sync):
        super().__init__("hosts updated")
        self.skip_sync = skip_sync
