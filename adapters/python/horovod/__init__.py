"""Horovod: distributed training over one runtime of pluggable transports
and reducers. Framework APIs: horovod.torch."""

__version__ = "0.1.0"
