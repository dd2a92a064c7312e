"""The MXNet example trains: examples/mxnet/mxnet_digits.py reaches on this
job's ranks the accuracy it reaches on one rank (run alongside, as a
separate single-process job)."""

import os
import sys

import horovod.mxnet as hvd

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                        "..", "examples", "mxnet")
sys.path.insert(0, EXAMPLES)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "support", "python"))

from example_jobs import ACCURACY, single_rank_job  # noqa: E402

import mxnet_digits  # noqa: E402

hvd.init()


def test_digits_accuracy_matches_one_rank():
    args = ["--quiet", "--epochs", "10"]
    reference = single_rank_job(EXAMPLES, "mxnet_digits.py", *args) \
        if hvd.rank() == 0 else None
    accuracy = mxnet_digits.train(mxnet_digits.parse_args(args))
    single = None
    if reference is not None:
        out, _ = reference.communicate(timeout=240)
        match = ACCURACY.search(out)
        assert reference.returncode == 0 and match, out
        assert match.group(1) == "1"
        single = float(match.group(2)) / 100
        print(f"accuracy: 1 rank {single:.4f}, {hvd.size()} ranks "
              f"{accuracy:.4f}")
    single = hvd.broadcast_object(single, root_rank=0)
    assert accuracy > 0.9 and single > 0.9
    assert abs(accuracy - single) <= 0.03
