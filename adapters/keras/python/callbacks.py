"""horovod.keras.callbacks: those of horovod.tensorflow.keras."""

from horovod.tensorflow.keras.callbacks import (  # noqa: F401
    BroadcastGlobalVariablesCallback, LearningRateScheduleCallback,
    LearningRateWarmupCallback, MetricAverageCallback)
