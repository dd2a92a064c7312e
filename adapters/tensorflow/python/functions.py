"""Broadcast of variables, and collectives on Python objects."""

import numpy as np
import tensorflow as tf

from horovod.common import objects as _objects
from horovod.tensorflow.mpi_ops import allgather, broadcast
from horovod.tensorflow.mpi_ops import global_process_set

# (root_rank, process set id) -> the tf.function that broadcasts a list of
# variables eagerly: every variable's broadcast in flight at once.
_eager_broadcasts = {}


def _eager_broadcast_fn(root_rank, process_set):
    key = (root_rank, process_set.process_set_id)
    if key not in _eager_broadcasts:
        @tf.function
        def broadcast_group(variables):
            for v in variables:
                v.assign(broadcast(v, root_rank, process_set=process_set))
        _eager_broadcasts[key] = broadcast_group
    return _eager_broadcasts[key]


def _as_tf_variable(v):
    """The tf.Variable of a Keras 3 variable (which wraps one); v else."""
    if isinstance(v, tf.Variable):
        return v
    inner = getattr(v, "value", None)
    return inner if isinstance(inner, tf.Variable) else v


def broadcast_variables(variables, root_rank, process_set=global_process_set,
                        inplace=False):
    """Assigns root_rank's values to the variables on every rank of the set.

    Eagerly, it runs at once; in a graph (tf.compat.v1) it returns the op
    that does it. `inplace` is accepted for Horovod's signature: the
    variables are always assigned.
    """
    variables = [_as_tf_variable(v) for v in variables]
    if tf.executing_eagerly():
        if variables:
            _eager_broadcast_fn(root_rank, process_set)(variables)
        return None
    return tf.group(*[v.assign(broadcast(v, root_rank,
                                         process_set=process_set))
                      for v in variables])


def broadcast_global_variables(root_rank):
    """The op broadcasting every global variable of the default graph from
    root_rank (tf.compat.v1 graph code; eagerly use broadcast_variables)."""
    if tf.executing_eagerly():
        raise RuntimeError(
            "hvd.broadcast_global_variables() does not support eager "
            "execution. Please use `hvd.broadcast_variables(<model/optimizer "
            "variables>)` instead.")
    return broadcast_variables(tf.compat.v1.global_variables(), root_rank)


def _rank_in(process_set):
    if process_set.process_set_id is None:
        raise ValueError(f"{process_set} is not registered")
    return process_set.rank()


def _evaluate(tensor, session):
    if tf.executing_eagerly():
        return tensor.numpy()
    session = session or tf.compat.v1.get_default_session()
    if session is None:
        raise ValueError("in graph mode broadcast_object and "
                         "allgather_object need a session: pass session= "
                         "or run inside `with session.as_default()`")
    return session.run(tensor)


def broadcast_object(obj, root_rank=0, session=None, name=None,
                     process_set=global_process_set):
    """Pickles obj on root_rank and returns the root's object on every rank
    of the set (root_rank is a rank of the set). In graph mode it runs the
    broadcast in `session` (default: the default session). name, if given,
    must be the same on every rank; by default one fixed name, whatever the
    object's type."""
    name = name or "broadcast_object"
    is_root = _rank_in(process_set) == root_rank
    if is_root:
        payload = np.frombuffer(_objects.serialize(obj), dtype=np.uint8)
    else:
        payload = np.zeros(0, dtype=np.uint8)
    length = tf.constant([payload.size], dtype=tf.int64)
    length = _evaluate(broadcast(length, root_rank, name=name + ".sz",
                                 process_set=process_set), session)
    if not is_root:
        payload = np.zeros(int(length[0]), dtype=np.uint8)
    received = _evaluate(broadcast(tf.constant(payload), root_rank,
                                   name=name + ".t", process_set=process_set),
                         session)
    if is_root:
        return obj
    return _objects.deserialize(received.tobytes())


def allgather_object(obj, session=None, name=None,
                     process_set=global_process_set):
    """Pickles obj on every rank of the set; returns the list of all ranks'
    objects in rank order. name as for broadcast_object."""
    name = name or "allgather_object"
    payload = np.frombuffer(_objects.serialize(obj), dtype=np.uint8)
    lengths = allgather(tf.constant([payload.size], dtype=tf.int64),
                        name=name + ".sz", process_set=process_set)
    gathered = allgather(tf.constant(payload), name=name + ".t",
                         process_set=process_set)
    lengths = _evaluate(lengths, session)
    gathered = _evaluate(gathered, session)
    return _objects.split_gathered(gathered.tobytes(), lengths.tolist())
