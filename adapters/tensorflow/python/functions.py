"""Broadcast of variables, and collectives on Python objects."""

import numpy as np
import tensorflow as tf

from horovod.common import objects as _objects
from horovod.tensorflow.mpi_ops import (allgather, broadcast, broadcast_,
                                        global_process_set, rank)
from horovod.tensorflow.util import _executing_eagerly


def broadcast_variables(variables, root_rank, process_set=global_process_set,
                        inplace=False):
    """Assigns root_rank's values to the variables on every rank of the set.

    Eagerly, it runs at once; in a graph (tf.compat.v1) it returns the op
    that does it. The variables are assigned in place whatever `inplace`
    says (Horovod's in-place broadcast saves a copy on GPUs; the values are
    the same).
    """
    values = broadcast_(variables, root_rank, process_set=process_set)
    if _executing_eagerly():
        return None
    return tf.group(*values)


def broadcast_global_variables(root_rank):
    """The op broadcasting every global variable of the default graph from
    root_rank (tf.compat.v1 graph code; eagerly use broadcast_variables)."""
    if _executing_eagerly():
        raise RuntimeError(
            "hvd.broadcast_global_variables() does not support eager "
            "execution. Please use `hvd.broadcast_variables(<model/optimizer "
            "variables>)` instead.")
    return broadcast_variables(tf.compat.v1.global_variables(), root_rank)


def _evaluate(tensor, session):
    if _executing_eagerly():
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
    of the set (root_rank is a global rank, a member of the set). In graph
    mode it runs the
    broadcast in `session` (default: the default session). name, if given,
    must be the same on every rank; by default one fixed name, whatever the
    object's type."""
    name = name or "broadcast_object"
    is_root = rank() == root_rank
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


def broadcast_object_fn(root_rank=0, session=None, name=None,
                        process_set=global_process_set):
    """tf.compat.v1 graph code: builds the broadcast ops of
    broadcast_object() once and returns a function obj -> root_rank's obj
    that runs them in `session` (default: the default session) with the
    object fed through placeholders."""
    name = name or "broadcast_object_fn"
    length = tf.compat.v1.placeholder(tf.int64, [1], name="bcast_object_size")
    payload = tf.compat.v1.placeholder(tf.uint8, [None],
                                       name="bcast_object_data")
    length_out = broadcast(length, root_rank, name=name + ".sz",
                           process_set=process_set)
    payload_out = broadcast(payload, root_rank, name=name + ".t",
                            process_set=process_set)
    session = session or tf.compat.v1.get_default_session()

    def broadcast_one(obj):
        is_root = rank() == root_rank
        data = (np.frombuffer(_objects.serialize(obj), dtype=np.uint8)
                if is_root else np.zeros(0, dtype=np.uint8))
        size = session.run(length_out, feed_dict={length: [data.size]})
        if not is_root:
            data = np.zeros(int(size[0]), dtype=np.uint8)
        received = session.run(payload_out, feed_dict={payload: data})
        return obj if is_root else _objects.deserialize(received.tobytes())

    return broadcast_one
