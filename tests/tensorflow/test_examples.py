"""The TensorFlow examples train: the Keras digits example reaches on this
job's ranks the accuracy it reaches on one rank (run alongside, as a
separate single-process job), and the DistributedGradientTape loop learns."""

import os
import sys

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import horovod.tensorflow as hvd  # noqa: E402

pytest.importorskip("sklearn")

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                        "..", "examples", "tensorflow")
sys.path.insert(0, EXAMPLES)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "support", "python"))

from example_jobs import ACCURACY, single_rank_job  # noqa: E402

import tensorflow_gradient_tape_digits  # noqa: E402
import tensorflow_keras_digits  # noqa: E402

hvd.init()


def test_keras_digits_accuracy_matches_one_rank():
    args = ["--quiet"]
    reference = single_rank_job(EXAMPLES, "tensorflow_keras_digits.py", *args) \
        if hvd.rank() == 0 else None
    accuracy = tensorflow_keras_digits.train(
        tensorflow_keras_digits.parse_args(args))
    if reference is None:
        single = None
    else:
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


def test_gradient_tape_loop_learns(capsys, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["x", "--steps", "240"])
    tensorflow_gradient_tape_digits.main()
    if hvd.rank() == 0:
        match = ACCURACY.search(capsys.readouterr().out)
        assert match and float(match.group(2)) > 85, match
    hvd.barrier()
