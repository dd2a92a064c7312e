"""DistributedGradientTape: a tf.GradientTape whose gradient() returns the
gradients allreduced over the ranks."""

import tensorflow as tf

from horovod.tensorflow.compression import Compression
from horovod.tensorflow.gradients import cached_allreducer
from horovod.tensorflow.mpi_ops import Average, global_process_set


class _DistributedGradientTape(tf.GradientTape):
    def __init__(self, tape, allreducer, persistent=False,
                 watch_accessed_variables=True):
        super(self.__class__, self).__init__(persistent,
                                             watch_accessed_variables)
        self._tape = tape
        self._hvd_allreducer = allreducer

    def gradient(self, target, sources, output_gradients=None,
                 unconnected_gradients=tf.UnconnectedGradients.NONE):
        gradients = super(self.__class__, self).gradient(
            target, sources, output_gradients, unconnected_gradients)
        flat = tf.nest.flatten(gradients)
        reduced = self._hvd_allreducer(flat, tf.nest.flatten(sources))
        return tf.nest.pack_sequence_as(gradients, reduced)


def DistributedGradientTape(gradtape, device_dense='', device_sparse='',
                            compression=Compression.none,
                            sparse_as_dense=False, op=Average,
                            gradient_predivide_factor=1.0, num_groups=0,
                            groups=None, process_set=global_process_set):
    """Wraps a tf.GradientTape (after or before recording) so that
    gradient() allreduces the gradients over process_set.

    op: hvd.Average (default), Sum or Adasum. Sparse gradients
    (tf.IndexedSlices) are allgathered unless sparse_as_dense.
    gradient_predivide_factor (Average only): gradients are scaled by
    1 / factor before the sum and by factor / size after it.
    groups: an int (that many fused groups) or a list of lists of variables
    (each list one grouped allreduce); num_groups is its deprecated name.
    """
    if num_groups and groups is None:
        groups = num_groups
    allreducer = cached_allreducer("DistributedGradientTape", device_dense,
                                   device_sparse, compression,
                                   sparse_as_dense, op,
                                   gradient_predivide_factor, groups,
                                   process_set)
    cls = type(gradtape.__class__.__name__, (gradtape.__class__,),
               dict(_DistributedGradientTape.__dict__))
    return cls(gradtape._tape, allreducer, gradtape._persistent,
               gradtape._watch_accessed_variables)
