"""A fixed (not elastic) job in which rank 1 SIGKILLs itself between
allreduces: every survivor must raise what Horovod raises there,
HorovodInternalError in PyTorch, an UnknownError naming the Horovod op in
TensorFlow (which hvd.elastic.run turns into HorovodInternalError).

    rank_killed.py torch|tensorflow

A survivor prints `survivor R raised NAME after S s` and exits 0; the job's
status is then the killed rank's."""

import os
import signal
import sys
import time

framework = sys.argv[1]
if framework == "torch":
    import torch
    import horovod.torch as hvd

    def allreduce(i):
        return hvd.allreduce(torch.ones(1000), name=f"step.{i}")

    failure = hvd.HorovodInternalError
else:
    import tensorflow as tf
    import horovod.tensorflow as hvd

    def allreduce(i):
        return hvd.allreduce(tf.ones([1000]), name=f"step.{i}")

    failure = tf.errors.UnknownError

hvd.init()
started = None
for i in range(100000):
    if hvd.rank() == 1 and i == 20:
        os.kill(os.getpid(), signal.SIGKILL)
    try:
        if i == 20:
            started = time.monotonic()
        allreduce(i)
    except failure as e:
        waited = time.monotonic() - (started or time.monotonic())
        print(f"survivor {hvd.rank()} raised {type(e).__name__} after "
              f"{waited:.2f} s: {str(e)[:200]}", flush=True)
        sys.exit(0)
print(f"rank {hvd.rank()} never saw the failure", flush=True)
sys.exit(1)
