"""DistributedGradientTape: a tf.GradientTape whose gradient() returns the
gradients allreduced over the ranks; PartialDistributedGradientTape keeps
the gradients of local layers (model parallelism) local."""

import tensorflow as tf

from horovod.tensorflow.compression import Compression
from horovod.tensorflow.gradients import (LocalVariables, cached_allreducer,
                                          resolve_groups)
from horovod.tensorflow.mpi_ops import Average, global_process_set


class _DistributedGradientTape(tf.GradientTape):
    def __init__(self, tape, allreducer, local_sources, persistent=False,
                 watch_accessed_variables=True):
        super(self.__class__, self).__init__(persistent,
                                             watch_accessed_variables)
        self._tape = tape
        self._hvd_allreducer = allreducer
        self._local_sources = local_sources

    def register_local_source(self, source):
        """Registers a source (variable or watched tensor) as local to this
        rank: its gradient is not allreduced (and is divided by the set size
        when scale_local_gradients)."""
        self._local_sources.register(source)

    def gradient(self, target, sources, output_gradients=None,
                 use_generic_names=False,
                 unconnected_gradients=tf.UnconnectedGradients.NONE):
        """The gradients of target, allreduced except those of local
        sources. use_generic_names: the allreduces are named grad_<i> (the
        same on every rank whatever the variables' names)."""
        gradients = super(self.__class__, self).gradient(
            target, sources, output_gradients, unconnected_gradients)
        flat = tf.nest.flatten(gradients)
        reduced = self._local_sources.reduce(
            self._hvd_allreducer, flat, tf.nest.flatten(sources),
            use_generic_names)
        return tf.nest.pack_sequence_as(gradients, reduced)

    def get_local_and_global_gradients(self, target, sources,
                                       output_gradients=None,
                                       use_generic_names=False):
        """gradient(), split: ([(local source, gradient)], [(other source,
        gradient)]), each in the order of sources."""
        gradients = self.gradient(target, sources, output_gradients,
                                  use_generic_names)
        pairs = list(zip(sources, gradients))
        return ([p for p in pairs if p[0] in self._local_sources],
                [p for p in pairs if p[0] not in self._local_sources])


def DistributedGradientTape(gradtape, device_dense='', device_sparse='',
                            compression=Compression.none,
                            sparse_as_dense=False, op=Average,
                            gradient_predivide_factor=1.0, num_groups=0,
                            groups=None, process_set=global_process_set,
                            scale_local_gradients=True):
    """Wraps a tf.GradientTape (after or before recording) so that
    gradient() allreduces the gradients over process_set.

    op: hvd.Average (default), Sum or Adasum. Sparse gradients
    (tf.IndexedSlices) are allgathered unless sparse_as_dense.
    gradient_predivide_factor (Average only): gradients are scaled by
    1 / factor before the sum and by factor / size after it.
    groups: an int (that many fused groups) or a list of lists of variables
    (each list one grouped allreduce); num_groups is its deprecated name.
    Sources registered with register_local_source() keep their local
    gradient, divided by the set size when scale_local_gradients.
    """
    groups = resolve_groups(num_groups, groups)
    allreducer = cached_allreducer("DistributedGradientTape", device_dense,
                                   device_sparse, compression,
                                   sparse_as_dense, op,
                                   gradient_predivide_factor, groups,
                                   process_set)
    cls = type(gradtape.__class__.__name__, (gradtape.__class__,),
               dict(_DistributedGradientTape.__dict__))
    return cls(gradtape._tape, allreducer,
               LocalVariables(process_set, scale_local_gradients),
               gradtape._persistent, gradtape._watch_accessed_variables)


def layers_variables(local_layers):
    """The trainable variables of a layer or a collection of layers (Keras
    layers; anything else is refused)."""
    import keras
    if local_layers is None:
        return []
    if isinstance(local_layers, keras.layers.Layer):
        local_layers = [local_layers]
    local_layers = list(local_layers)
    if not all(isinstance(layer, keras.layers.Layer)
               for layer in local_layers):
        raise ValueError("All local layers must be of tf.keras.layers.Layer "
                         "type.")
    return [v for layer in local_layers for v in layer.trainable_weights]


def PartialDistributedGradientTape(gradtape, device_dense='',
                                   device_sparse='',
                                   compression=Compression.none,
                                   sparse_as_dense=False, op=Average,
                                   gradient_predivide_factor=1.0,
                                   num_groups=0, groups=None,
                                   process_set=global_process_set,
                                   local_layers=None,
                                   scale_local_gradients=True):
    """DistributedGradientTape with the trainable variables of
    local_layers (a Keras layer or a collection of them) registered as
    local sources."""
    tape = DistributedGradientTape(gradtape, device_dense, device_sparse,
                                   compression, sparse_as_dense, op,
                                   gradient_predivide_factor, num_groups,
                                   groups, process_set, scale_local_gradients)
    for v in layers_variables(local_layers):
        tape.register_local_source(v)
    return tape
