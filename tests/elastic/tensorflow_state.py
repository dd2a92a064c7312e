"""hvd.elastic.TensorFlowState in a custom TensorFlow 2 loop (no Keras):

    tensorflow_state.py STEPS KILL_AT

Gradient descent on a fixed least-squares problem that every rank computes
whole, so the result after N steps does not depend on the world size (the
reference is reference() below). Each step updates the variables, then
allreduces them (every rank must hold the same), then commits. Variables
start different on each rank: the first sync must make them rank 0's. In
the first world, rank 1 SIGKILLs itself after its update of step KILL_AT
and before the allreduce: the survivors have updated too, and must go back
to the last commit before the next world.

Each worker prints `world E rank R step S w W` after each sync and
`final S W` at the end (W a JSON list). The test imports reference() from
here: TensorFlow is imported in main() only."""

import json
import os
import signal
import sys

import numpy as np

A = np.arange(1.0, 13.0).reshape(4, 3) / 10.0
B = np.array([1.0, -2.0, 0.5, 3.0])
LR = 0.1


def step_update(w):
    """The gradient step of 0.5 |A w - B|^2."""
    return LR * (A.T @ (A @ w - B))


def reference(steps):
    w = np.ones(3)
    for _ in range(steps):
        w = w - step_update(w)
    return w


def main():
    import tensorflow as tf
    import horovod.tensorflow as hvd

    steps, kill_at = int(sys.argv[1]), int(sys.argv[2])
    hvd.init()
    weights = tf.Variable(np.full(3, float(hvd.rank() + 1)))
    state = hvd.elastic.TensorFlowState([weights], step=0)

    def world():
        return int(os.environ.get("HOROVOD_WORLD_EPOCH", "0"))

    @hvd.elastic.run
    def train(state):
        print(f"world {world()} rank {hvd.rank()} step {state.step} "
              f"w {json.dumps(weights.numpy().tolist())}", flush=True)
        while state.step < steps:
            weights.assign_sub(step_update(weights.numpy()))
            if world() == 1 and hvd.rank() == 1 and state.step + 1 == kill_at:
                os.kill(os.getpid(), signal.SIGKILL)
            mean = hvd.allreduce(weights, name=f"check.{state.step}")
            if not np.allclose(mean.numpy(), weights.numpy(), rtol=1e-12,
                               atol=0):
                raise AssertionError(f"rank {hvd.rank()} holds other weights "
                                     f"than the mean at step {state.step}")
            state.step += 1
            state.commit()

    train(state)
    print(f"final {state.step} {json.dumps(weights.numpy().tolist())}",
          flush=True)
    hvd.shutdown()


if __name__ == "__main__":
    main()
