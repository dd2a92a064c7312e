"""horovod.keras: the same API as horovod.tensorflow.keras (Keras 3 runs
on TensorFlow here), under Horovod's other import name."""

from horovod.tensorflow.keras import *  # noqa: F401,F403
from horovod.tensorflow.keras import (  # noqa: F401
    DistributedOptimizer, callbacks, elastic, load_model)
