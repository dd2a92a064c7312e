"""Two of Horovod's promises that rest on the core, checked from
horovod.tensorflow under horovodrun -np 2 and -np 3:

- prescale_factor / postscale_factor give exactly Horovod's numbers on CPU
  (threshold zero, as Horovod's own tests): the multiplication in the
  tensor's type for float32 and float64, in float32 for float16, in float64
  for integers, then cast back as TensorFlow casts;
- root_rank inside a process set is a global rank (broadcast, broadcast_,
  broadcast_variables, broadcast_object, and the broadcast's gradient).

Every rank reduces the same tensor, as in Horovod's tests, so the sum's
order cannot change a bit."""

import numpy as np
import pytest
import tensorflow as tf

import horovod.tensorflow as hvd

hvd.init(process_sets="dynamic")
RANK, SIZE = hvd.rank(), hvd.size()
# A set without rank 0: [1] on 2 ranks, [1, 2] on 3; its last member is
# global rank SIZE - 1, which is not its own rank within the set.
TAIL = hvd.add_process_set(list(range(1, SIZE)))
ROOT = SIZE - 1

INT_DTYPES = [tf.uint8, tf.int8, tf.int32, tf.int64]
DTYPES = INT_DTYPES + [tf.float16, tf.float32, tf.float64]
FACTOR = 0.8176249131  # a factor whose products round


def same_tensor(dtype, shape=(2 * SIZE, 5)):
    rng = np.random.RandomState(1234)
    low = 0 if dtype == tf.uint8 else -100
    high = 100 if dtype in (tf.uint8, tf.int8) else 100
    if dtype in INT_DTYPES:
        values = rng.randint(low, high, size=shape)
    else:
        values = rng.uniform(-100, 100, size=shape)
    return tf.cast(tf.constant(values), dtype)


def scaling_type(dtype):
    """Where Horovod multiplies on CPU."""
    if dtype in INT_DTYPES:
        return tf.float64
    return tf.float32 if dtype == tf.float16 else dtype


def scaled(tensor, factor):
    """factor * tensor as Horovod computes it, cast back to the dtype."""
    t = scaling_type(tensor.dtype)
    return tf.cast(tf.cast(factor, t) * tf.cast(tensor, t), tensor.dtype)


def expect_equal(got, expected):
    np.testing.assert_array_equal(got.numpy(), expected.numpy())


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_allreduce_prescale_is_exact(dtype):
    tensor = same_tensor(dtype)
    summed = hvd.allreduce(tensor, op=hvd.Sum, prescale_factor=FACTOR)
    expect_equal(summed, scaled(tensor, FACTOR) * SIZE)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_allreduce_postscale_is_exact(dtype):
    tensor = same_tensor(dtype)
    summed = hvd.allreduce(tensor, op=hvd.Sum, postscale_factor=FACTOR)
    expect_equal(summed, scaled(tensor * SIZE, FACTOR))


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_grouped_allreduce_scale_factors_are_exact(dtype):
    a, b = same_tensor(dtype), same_tensor(dtype, shape=(3,))
    pre = hvd.grouped_allreduce([a, b], op=hvd.Sum, prescale_factor=FACTOR)
    post = hvd.grouped_allreduce([a, b], op=hvd.Sum, postscale_factor=FACTOR)
    for got, t in zip(pre, [a, b]):
        expect_equal(got, scaled(t, FACTOR) * SIZE)
    for got, t in zip(post, [a, b]):
        expect_equal(got, scaled(t * SIZE, FACTOR))


def my_rows(tensor):
    rows = tensor.shape[0] // SIZE
    return tensor[RANK * rows:(RANK + 1) * rows]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_reducescatter_scale_factors_are_exact(dtype):
    tensor = same_tensor(dtype)
    pre = hvd.reducescatter(tensor, op=hvd.Sum, prescale_factor=FACTOR)
    post = hvd.reducescatter(tensor, op=hvd.Sum, postscale_factor=FACTOR)
    expect_equal(pre, my_rows(scaled(tensor, FACTOR) * SIZE))
    expect_equal(post, my_rows(scaled(tensor * SIZE, FACTOR)))
    grouped = hvd.grouped_reducescatter([tensor, 2 * tensor], op=hvd.Sum,
                                        prescale_factor=FACTOR)
    for got, t in zip(grouped, [tensor, 2 * tensor]):
        expect_equal(got, my_rows(scaled(t, FACTOR) * SIZE))


# ---- root_rank in a process set is a global rank ----------------------------

def in_tail():
    return RANK in TAIL.ranks


@pytest.fixture(autouse=True)
def every_rank_finishes_each_test():
    # Rank 0 skips the set's tests; without this it could reach shutdown
    # (which ends the job on every rank, as Horovod's) while the set runs.
    yield
    hvd.barrier()


def test_broadcast_root_is_global_in_a_set():
    if not in_tail():
        return
    out = hvd.broadcast(tf.constant([RANK * 10.0]), ROOT, process_set=TAIL)
    np.testing.assert_array_equal(out.numpy(), [ROOT * 10.0])
    traced = tf.function(lambda t: hvd.broadcast(t, ROOT, process_set=TAIL))
    np.testing.assert_array_equal(traced(tf.constant([RANK + 0.5])).numpy(),
                                  [ROOT + 0.5])


def test_variable_broadcasts_root_is_global_in_a_set():
    if not in_tail():
        return
    a, b = tf.Variable([float(RANK)]), tf.Variable([RANK, 1])
    hvd.broadcast_([a], ROOT, process_set=TAIL)
    hvd.broadcast_variables([b], root_rank=ROOT, process_set=TAIL)
    np.testing.assert_array_equal(a.numpy(), [float(ROOT)])
    np.testing.assert_array_equal(b.numpy(), [ROOT, 1])


def test_broadcast_object_root_is_global_in_a_set():
    if not in_tail():
        return
    got = hvd.broadcast_object({"from": RANK}, root_rank=ROOT,
                               process_set=TAIL)
    assert got == {"from": ROOT}


def test_broadcast_gradient_in_a_set_is_the_average_on_the_global_root():
    if not in_tail():
        return
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = hvd.broadcast(x, ROOT, process_set=TAIL)
    grad = tape.gradient(y, x, output_gradients=tf.constant([RANK + 1.0,
                                                             1.0]))
    average = [np.mean([r + 1.0 for r in TAIL.ranks]), 1.0]
    np.testing.assert_allclose(grad.numpy(),
                               average if RANK == ROOT else [0.0, 0.0])
