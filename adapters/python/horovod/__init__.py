"""Horovod: distributed training over one runtime of pluggable transports
and reducers. Framework APIs: horovod.torch, horovod.tensorflow,
horovod.tensorflow.keras (alias horovod.keras)."""

__version__ = "0.1.0"
