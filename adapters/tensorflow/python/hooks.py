"""BroadcastGlobalVariablesHook: the tf.compat.v1 session hook that gives
every rank root_rank's initial variables (MonitoredTrainingSession)."""

import tensorflow as tf

from horovod.tensorflow.functions import broadcast_global_variables


class BroadcastGlobalVariablesHook(tf.compat.v1.train.SessionRunHook):
    """Broadcasts all global variables from root_rank once the session is
    created, so training starts from the same (initialised or restored)
    state on every rank."""

    def __init__(self, root_rank, device=''):
        super().__init__()
        self.root_rank = root_rank
        self.bcast_op = None
        self.device = device

    def begin(self):
        graph = tf.compat.v1.get_default_graph()
        if not self.bcast_op or self.bcast_op.graph != graph:
            with tf.device(self.device):
                self.bcast_op = broadcast_global_variables(self.root_rank)

    def after_create_session(self, session, coord):
        session.run(self.bcast_op)
