"""SyncBatchNormalization: Keras batch normalization whose training
statistics are those of the whole batch over every rank."""

import keras
import tensorflow as tf

from horovod.tensorflow.mpi_ops import Sum, _allreduce, size


class SyncBatchNormalization(keras.layers.BatchNormalization):
    """Batch normalization with the mean and variance averaged over the
    ranks during training, as Horovod's: each rank's batch weighs the same
    (equal local batch sizes give the statistics of the global batch).
    `fused` is accepted for Horovod's signature and must be False (Keras 3
    has no fused kernel; the layer never fuses)."""

    def __init__(self, fused=False, **kwargs):
        if fused in (True, None):
            raise ValueError("SyncBatchNormalization does not support "
                             "fused=True.")
        if not kwargs.get("name"):
            kwargs["name"] = "sync_batch_normalization"
        super().__init__(**kwargs)

    def _moments(self, inputs, mask):
        mean, variance = super()._moments(inputs, mask)
        if size() == 1:
            return mean, variance
        # Var[X] = E[X^2] - E[X]^2, with both expectations averaged.
        mean_of_square = variance + tf.math.square(mean)
        summed = _allreduce(tf.stack([mean, mean_of_square]), op=Sum)
        group_mean, group_mean_of_square = tf.unstack(
            summed / tf.cast(size(), summed.dtype))
        return (group_mean,
                group_mean_of_square - tf.math.square(group_mean))
