"""hvd.elastic for TensorFlow 2 (eager): run, TensorFlowKerasState,
TensorFlowState, ObjectState.

A collective that fails because a rank died raises TensorFlow's
UnknownError naming the Horovod op; run() turns it into
HorovodInternalError, as Horovod does, so the state is restored and the
worker moves to the next world. Graph-mode (tf.compat.v1 session) states
are not supported."""

import functools

import tensorflow as tf

from horovod.common.elastic import ObjectState as _ObjectState
from horovod.common.elastic import run_fn
from horovod.common.exceptions import HorovodInternalError
from horovod.tensorflow.functions import (allgather_object, broadcast_object,
                                          broadcast_variables)
from horovod.tensorflow.mpi_ops import init, rank, shutdown
from horovod.tensorflow.util import _executing_eagerly

_HOROVOD_OPS = ("HorovodAllreduce", "HorovodAllgather", "HorovodBroadcast",
                "HorovodAlltoall", "HorovodReducescatter", "HorovodBarrier",
                "HorovodGroupedAllreduce", "HorovodJoin")


def _check_eager():
    if not _executing_eagerly():
        raise NotImplementedError("hvd.elastic states need eager execution "
                                  "(TensorFlow 2); graph-mode sessions are "
                                  "not supported")


class ObjectState(_ObjectState):
    """Picklable attributes, broadcast with horovod.tensorflow."""

    def __init__(self, bcast_object=broadcast_object, get_rank=rank,
                 **kwargs):
        super().__init__(bcast_object=bcast_object, get_rank=get_rank,
                         **kwargs)
        self._allgather_object = allgather_object


class _VariablesState(ObjectState):
    """Saves, restores and broadcasts the lists of variables that
    _variables() gives."""

    def __init__(self, **kwargs):
        _check_eager()
        super().__init__(**kwargs)
        self._saved_variables = self._copy()

    def _variables(self):
        raise NotImplementedError()

    def _copy(self):
        return [tf.identity(v) for v in self._variables()]

    def save(self):
        self._saved_variables = self._copy()
        super().save()

    def restore(self):
        for var, saved in zip(self._variables(), self._saved_variables):
            var.assign(saved)
        super().restore()

    def sync_from(self, root):
        variables = self._variables()
        if variables:
            broadcast_variables(variables, root_rank=root)
        super().sync_from(root)


def _optimizer_variables(optimizer):
    variables = optimizer.variables
    return list(variables() if callable(variables) else variables)


class TensorFlowKerasState(_VariablesState):
    """A Keras model, its optimizer and picklable values."""

    def __init__(self, model, optimizer=None, backend=None, **kwargs):
        self.model = model
        self.optimizer = optimizer or model.optimizer
        self.backend = backend
        super().__init__(**kwargs)

    def _variables(self):
        if self.optimizer is None:
            return list(self.model.variables)
        # A new worker's optimizer has no slots before its first step: make
        # them, so that every rank broadcasts the same list.
        if hasattr(self.optimizer, "build") and \
                not getattr(self.optimizer, "built", True):
            self.optimizer.build(self.model.trainable_variables)
        return list(self.model.variables) + \
            _optimizer_variables(self.optimizer)


class TensorFlowState(_VariablesState):
    """A list of variables (default: tf.compat.v1.global_variables()) and
    picklable values."""

    def __init__(self, variables=None, session=None, **kwargs):
        if session is not None:
            raise NotImplementedError("TensorFlowState(session=...): graph-"
                                      "mode sessions are not supported")
        self.variables = variables if variables is not None else \
            tf.compat.v1.global_variables()
        super().__init__(**kwargs)

    def _variables(self):
        return list(self.variables)


def _reset():
    shutdown()
    init()


def _as_internal_errors(func):
    @functools.wraps(func)
    def wrapper(state, *args, **kwargs):
        try:
            return func(state, *args, **kwargs)
        except tf.errors.UnknownError as e:
            if any(op in str(e) for op in _HOROVOD_OPS):
                raise HorovodInternalError(str(e)) from e
            raise
    return wrapper


def run(func):
    """Decorator: func(state, ...) runs until it returns, moving to a new
    world after each failure or membership change."""
    return run_fn(_as_internal_errors(func), _reset)
