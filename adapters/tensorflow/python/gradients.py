"""Allreduce of a list of gradients, as DistributedGradientTape and both
DistributedOptimizers do it: sparse gradients gathered (or densified with
sparse_as_dense), dense ones allreduced one by one or in fused groups, the
average's division optionally split around the sum
(gradient_predivide_factor).

Eagerly, the reductions run inside one cached tf.function: its ops get the
graph's names, the same on every rank, and run concurrently."""

import warnings

import tensorflow as tf

from horovod.common.util import split_evenly
from horovod.tensorflow import mpi_ops
from horovod.tensorflow.collectives import allreduce, grouped_allreduce
from horovod.tensorflow.mpi_ops import Average
from horovod.tensorflow.util import _ref


def check_groups(groups):
    """groups: None, a positive int (that many groups of about equal
    size), or a list of lists of variables (one group each)."""
    if groups is None:
        return
    if isinstance(groups, list):
        seen = set()
        for group in groups:
            for v in group:
                if not hasattr(v, "shape") or not hasattr(v, "assign"):
                    raise ValueError("groups must consist of tf.Variable.")
                if id(v) in seen:
                    raise ValueError("A variable can only appear once in "
                                     "groups.")
                seen.add(id(v))
    elif isinstance(groups, bool) or not isinstance(groups, int) or groups <= 0:
        raise ValueError("groups should be a positive integer or a list of "
                         "list of tf.Variable.")


def resolve_groups(num_groups, groups):
    """groups, or the deprecated num_groups in its place (with Horovod's
    DeprecationWarning); checked."""
    if num_groups != 0:
        warnings.warn("Parameter `num_groups` has been replaced by `groups` "
                      "and will be removed in v0.23.0.", DeprecationWarning)
        if groups is None:
            groups = num_groups
    check_groups(groups)
    return groups


def _groups_key(groups):
    if isinstance(groups, list):
        return tuple(tuple(id(v) for v in group) for group in groups)
    return groups


class GradientAllreducer:
    """Callable: (gradients, variables) -> the gradients allreduced.

    gradients: a list of tf.Tensor, tf.IndexedSlices or None (a variable
    without gradient, left None). variables: the matching variables, needed
    only when groups lists variables.
    """

    def __init__(self, name, device_dense, device_sparse, compression,
                 sparse_as_dense, op, gradient_predivide_factor=1.0,
                 groups=None, process_set=mpi_ops.global_process_set,
                 postscale_factor=1.0):
        if gradient_predivide_factor != 1.0 and op != Average:
            raise ValueError("gradient_predivide_factor not supported with "
                             "op != Average")
        check_groups(groups)
        self._name = name
        self._device_dense = device_dense
        self._device_sparse = device_sparse
        self._compression = compression
        self._sparse_as_dense = sparse_as_dense
        self._op = op
        self._groups = groups
        self._process_set = process_set
        # Average divides by the set's size after the sum; the predivide
        # factor moves part of that division before it (as in Horovod, a
        # factor other than 1 refuses sparse gradients).
        self._prescale = 1.0 / gradient_predivide_factor
        self._postscale = gradient_predivide_factor
        # A scale of this binding's own (Keras' gradient accumulation): of
        # the dense results after the sum, of the sparse ones after the
        # gather.
        self._extra_postscale = postscale_factor
        self._traced = tf.function(self._reduce)

    def _dense_groups(self, grads, variables):
        """The index groups of the dense gradients to reduce together, as a
        tuple (hashable: part of the traced function's signature)."""
        dense = [i for i, g in enumerate(grads)
                 if g is not None and not isinstance(g, tf.IndexedSlices)]
        if self._groups is None:
            return tuple((i,) for i in dense)
        if isinstance(self._groups, int):
            return tuple(tuple(g) for g in split_evenly(dense, self._groups))
        if variables is None:
            raise ValueError("groups lists variables: the variables of the "
                             "gradients are needed to group them")
        position = {id(variables[i]): i for i in dense}
        out, grouped = [], set()
        for group in self._groups:
            members = tuple(position[id(v)] for v in group
                            if id(v) in position)
            if members:
                out.append(members)
                grouped.update(members)
        out += [(i,) for i in dense if i not in grouped]
        return tuple(out)

    def _reduce(self, grads, dense_groups, use_generic_names):
        def naming(i):
            """Horovod's use_generic_names: ops named grad_<i>, whatever
            the name scope (the same names on every rank even where the
            models' variable names differ)."""
            if not use_generic_names:
                return {}
            return {"name": f"grad_{i}", "ignore_name_scope": True}

        with tf.name_scope(self._name + "_Allreduce"):
            out = list(grads)
            for i, g in enumerate(grads):
                if isinstance(g, tf.IndexedSlices):
                    g = allreduce(g, device_sparse=self._device_sparse,
                                  op=self._op,
                                  prescale_factor=self._prescale,
                                  postscale_factor=self._postscale,
                                  process_set=self._process_set, **naming(i))
                    if self._extra_postscale != 1.0:
                        g = tf.IndexedSlices(
                            g.values * tf.cast(self._extra_postscale,
                                               g.values.dtype),
                            g.indices, g.dense_shape)
                    out[i] = g
            for n, group in enumerate(dense_groups):
                if len(group) == 1 and self._groups is None:
                    (i,) = group
                    out[i] = allreduce(grads[i],
                                       device_dense=self._device_dense,
                                       compression=self._compression,
                                       op=self._op,
                                       prescale_factor=self._prescale,
                                       postscale_factor=self._dense_postscale,
                                       process_set=self._process_set,
                                       **naming(i))
                    continue
                reduced = grouped_allreduce(
                    [grads[i] for i in group],
                    device_dense=self._device_dense,
                    compression=self._compression, op=self._op,
                    prescale_factor=self._prescale,
                    postscale_factor=self._dense_postscale,
                    process_set=self._process_set, **naming(n))
                for i, r in zip(group, reduced):
                    out[i] = r
            return out

    @property
    def _dense_postscale(self):
        return self._postscale * self._extra_postscale

    def __call__(self, grads, variables=None, use_generic_names=False):
        grads = list(grads)
        if self._sparse_as_dense:
            grads = [tf.convert_to_tensor(g)
                     if isinstance(g, tf.IndexedSlices) else g
                     for g in grads]
        if not self._process_set.included() or self._set_size() == 1:
            return grads
        dense_groups = self._dense_groups(grads, variables)
        if tf.executing_eagerly():
            return self._traced(grads, dense_groups, use_generic_names)
        return self._reduce(grads, dense_groups, use_generic_names)

    def _set_size(self):
        size = self._process_set.size()
        if size is None:
            raise ValueError(f"{self._process_set} is not registered")
        return size


class LocalVariables:
    """The variables registered as local to this rank (model parallelism,
    Horovod's register_local_var / register_local_source): their gradients
    are not allreduced; with scale_local_gradients they are divided by the
    process set's size, as Horovod does (the averaged loss they see is the
    whole set's)."""

    def __init__(self, process_set, scale_local_gradients=True):
        self._refs = set()
        self._process_set = process_set
        self._scale = scale_local_gradients

    def register(self, variable):
        self._refs.add(_ref(variable))

    def __contains__(self, variable):
        return _ref(variable) in self._refs

    def __bool__(self):
        return bool(self._refs)

    def reduce(self, allreducer, grads, variables, use_generic_names=False):
        """grads (of variables) with the shared ones allreduced and the
        local ones kept (scaled)."""
        if not self._refs:
            return allreducer(grads, variables, use_generic_names)
        shared = [i for i, v in enumerate(variables) if v not in self]
        reduced = allreducer([grads[i] for i in shared],
                             [variables[i] for i in shared],
                             use_generic_names)
        out = list(grads)
        for i, g in zip(shared, reduced):
            out[i] = g
        if self._scale:
            size = self._process_set.size()
            for i, v in enumerate(variables):
                if v in self and out[i] is not None:
                    out[i] = _divided(out[i], size)
        return out


def _divided(grad, size):
    if isinstance(grad, tf.IndexedSlices):
        return tf.IndexedSlices(grad.values / size, grad.indices,
                                grad.dense_shape)
    return grad / size


_allreducers = {}


def cached_allreducer(name, device_dense, device_sparse, compression,
                      sparse_as_dense, op, gradient_predivide_factor=1.0,
                      groups=None, process_set=mpi_ops.global_process_set):
    """One GradientAllreducer per setting: a DistributedGradientTape made
    every step reuses the traced function of the first."""
    check_groups(groups)
    key = (name, device_dense, device_sparse, compression, sparse_as_dense,
           op, gradient_predivide_factor, _groups_key(groups),
           process_set.process_set_id, tuple(process_set.ranks or ()))
    if key not in _allreducers:
        _allreducers[key] = GradientAllreducer(
            name, device_dense, device_sparse, compression, sparse_as_dense,
            op, gradient_predivide_factor, groups, process_set)
    return _allreducers[key]

