"""Helpers of horovod.tensorflow that Horovod keeps in horovod.tensorflow.util
(scripts and test suites written for Horovod import them from there)."""

import tensorflow as tf


def _executing_eagerly():
    """Whether TensorFlow runs eagerly here (not inside a tf.function or a
    tf.compat.v1 graph)."""
    return tf.executing_eagerly()


def _make_subgraph(f):
    """f as a tf.function: its ops run as one graph, concurrently."""
    return tf.function(f)


def _cache(f):
    """Memoizes f on its (hashable) arguments, separately for eager and
    graph callers."""
    cache = {}

    def wrapper(*args):
        key = (args, _executing_eagerly())
        if key not in cache:
            cache[key] = f(*args)
        return cache[key]

    return wrapper


def vars_to_refs(variables):
    """A (nested) list of variables as a hashable tuple of references."""
    if isinstance(variables, list):
        return tuple(vars_to_refs(v) for v in variables)
    return variables.ref()


def refs_to_vars(refs):
    """The inverse of vars_to_refs."""
    if isinstance(refs, tuple):
        return [refs_to_vars(r) for r in refs]
    return refs.deref()


def _as_tf_variable(v):
    """The tf.Variable of a Keras 3 variable (which wraps one); v else."""
    if isinstance(v, tf.Variable):
        return v
    inner = getattr(v, "value", None)
    return inner if isinstance(inner, tf.Variable) else v


def _ref(source):
    """A hashable key of a variable or watched tensor: the same for a Keras
    3 variable and the tf.Variable it wraps."""
    return _as_tf_variable(source).ref()
