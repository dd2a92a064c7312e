"""horovod.keras.elastic: the same as horovod.tensorflow.keras.elastic."""

from horovod.tensorflow.keras.elastic import (  # noqa: F401
    CommitStateCallback, KerasState, ObjectState, TensorFlowKerasState,
    TensorFlowState, UpdateBatchStateCallback, UpdateEpochStateCallback, run)
