"""Keras callbacks of horovod.tensorflow.keras (Keras 3)."""

import warnings

import keras
import numpy as np
import tensorflow as tf

import horovod.tensorflow as hvd
from horovod.tensorflow.util import _ref


def _is_variable(v):
    return isinstance(v, (tf.Variable, keras.Variable))


class BroadcastGlobalVariablesCallback(keras.callbacks.Callback):
    """Gives every rank root_rank's model and optimizer variables: the
    model's at the start of training (when it is built), both after the
    first batch (the optimizer's variables exist by then). Training so
    starts consistently from random weights or from a checkpoint that only
    root_rank restored.

    local_variables: a variable or a collection of variables local to each
    rank (model parallelism): the model's broadcast leaves them out.
    """

    def __init__(self, root_rank, device='', local_variables=None):
        super().__init__()
        self.root_rank = root_rank
        self.device = device
        self.broadcast_done = False
        self._local_vars = set()
        if local_variables is None:
            local_variables = []
        elif _is_variable(local_variables):
            local_variables = [local_variables]
        elif not all(_is_variable(v) for v in local_variables):
            raise ValueError("All local variables must be of tf.Variable "
                             "type.")
        for v in local_variables:
            self.register_local_var(v)

    def register_local_var(self, var):
        """Leaves var out of the model's broadcast."""
        self._local_vars.add(_ref(var))

    def _broadcast(self, variables):
        with tf.device(self.device):
            hvd.broadcast_variables(variables, root_rank=self.root_rank)

    def _model_variables(self):
        return [v for v in self.model.variables
                if _ref(v) not in self._local_vars]

    def on_train_begin(self, logs=None):
        if not self.broadcast_done and self.model.built:
            self._broadcast(self._model_variables())

    def on_train_batch_end(self, batch, logs=None):
        if self.broadcast_done:
            return
        self._broadcast(self._model_variables())
        if self.model.optimizer is not None:
            self._broadcast(self.model.optimizer.variables)
        self.broadcast_done = True


class MetricAverageCallback(keras.callbacks.Callback):
    """Replaces each epoch's metrics (the logs of on_epoch_end) by their
    average over the ranks, so validation metrics measured on each rank's
    shard are the whole set's. Put it before callbacks that read metrics
    (ReduceLROnPlateau, checkpoints, TensorBoard)."""

    def __init__(self, device=''):
        super().__init__()
        self.device = device

    def on_epoch_end(self, epoch, logs=None):
        if not logs:
            return
        names = sorted(k for k, v in logs.items()
                       if np.ndim(v) == 0 and
                       np.issubdtype(np.asarray(v).dtype, np.number))
        if not names:
            return
        with tf.device(self.device):
            # In Keras' float type, as Horovod averages them: the same
            # numbers. Every rank averages the same names in the same order.
            values = tf.constant([logs[k] for k in names],
                                 dtype=keras.backend.floatx())
            averaged = hvd.allreduce(values, op=hvd.Average,
                                     name="MetricAverage." + ".".join(names))
        for name, value in zip(names, averaged.numpy()):
            logs[name] = value


def _get_lr(optimizer):
    """The learning rate as Keras holds it (a float32 scalar)."""
    return tf.convert_to_tensor(optimizer.learning_rate).numpy()


class LearningRateScheduleCallback(keras.callbacks.Callback):
    """Sets the learning rate to initial_lr * multiplier(epoch) for epochs
    start_epoch <= epoch < end_epoch.

    multiplier: a function of the epoch, or a number m for exponential
    decay, m ** (epoch - start_epoch), as in Horovod. initial_lr is
    required. staircase: change the rate at the start of each epoch (epoch
    an integer); otherwise at every batch, epoch then counting fractions
    (steps_per_epoch batches an epoch, by default those of model.fit).
    momentum_correction is accepted for
    Horovod's signature: Keras 3 compiles an optimizer's momentum into its
    training step as a constant, so it is not corrected (a warning says so
    where it would have been).
    """

    def __init__(self, initial_lr, multiplier, start_epoch=0, end_epoch=None,
                 staircase=True, momentum_correction=True,
                 steps_per_epoch=None):
        super().__init__()
        self.initial_lr = initial_lr
        self.start_epoch = start_epoch
        self.end_epoch = end_epoch
        self.staircase = staircase
        self.momentum_correction = momentum_correction
        self.steps_per_epoch = steps_per_epoch
        self.current_epoch = None
        self._warned_momentum = False
        if callable(multiplier):
            self.multiplier = multiplier
        else:
            self.multiplier = lambda epoch: multiplier ** (epoch -
                                                           start_epoch)
        if initial_lr is None:
            raise ValueError("Parameter `initial_lr` is required")

    def _in_range(self, epoch):
        return (epoch >= self.start_epoch and
                (self.end_epoch is None or epoch < self.end_epoch))

    def _adjust_learning_rate(self, epoch):
        optimizer = self.model.optimizer
        old_lr = _get_lr(optimizer)
        new_lr = self.initial_lr * self.multiplier(epoch)
        optimizer.learning_rate = new_lr
        if (self.momentum_correction and not self._warned_momentum and
                getattr(optimizer, "momentum", 0) and old_lr != new_lr):
            warnings.warn("LearningRateScheduleCallback: momentum "
                          "correction does not apply to Keras 3 optimizers "
                          "(their momentum is a compiled constant)")
            self._warned_momentum = True

    def on_train_begin(self, logs=None):
        if not self.staircase and not self.steps_per_epoch:
            self.steps_per_epoch = (self.params or {}).get("steps")
            if not self.steps_per_epoch:
                raise ValueError("steps_per_epoch is needed when "
                                 "staircase=False and model.fit() does not "
                                 "know the number of steps")

    def on_epoch_begin(self, epoch, logs=None):
        self.current_epoch = epoch

    def on_train_batch_begin(self, batch, logs=None):
        epoch = self.current_epoch
        if not self._in_range(epoch):
            return
        if self.staircase:
            if batch == 0:
                self._adjust_learning_rate(epoch)
        else:
            self._adjust_learning_rate(epoch + float(batch) /
                                       self.steps_per_epoch)

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs["lr"] = _get_lr(self.model.optimizer)


class LearningRateWarmupCallback(LearningRateScheduleCallback):
    """Grows the learning rate from initial_lr / size to initial_lr over
    warmup_epochs epochs, batch by batch (Goyal et al., "Accurate, Large
    Minibatch SGD"): large global batches train stably from the start.
    As Horovod's, the rate of a batch is that of the end of the batch, so
    each epoch ends on a round value and the last warmup batch runs at
    initial_lr."""

    def __init__(self, initial_lr, warmup_epochs=5, momentum_correction=True,
                 steps_per_epoch=None, verbose=0):
        def multiplier(epoch):
            # Per batch: epoch is fractional here.
            epoch += 1.0 / self.steps_per_epoch
            size = hvd.size()
            return 1.0 / size * (epoch * (size - 1) / warmup_epochs + 1)

        super().__init__(initial_lr, multiplier, start_epoch=0,
                         end_epoch=warmup_epochs, staircase=False,
                         momentum_correction=momentum_correction,
                         steps_per_epoch=steps_per_epoch)
        self.verbose = verbose

    def on_epoch_end(self, epoch, logs=None):
        super().on_epoch_end(epoch, logs)
        if (epoch == self.end_epoch - 1 and self.verbose > 0 and
                hvd.rank() == 0):
            print("\nEpoch %d: finished gradual learning rate warmup to %g."
                  % (epoch + 1, _get_lr(self.model.optimizer)))
