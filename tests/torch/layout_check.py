"""Run on `horovodrun -H localhost:2,127.0.0.1:1 -np 3` (two "hosts" on
this machine, 2 + 1 ranks): the layout queries and is_homogeneous."""

import horovod.torch as hvd

hvd.init()
host_sizes = {0: 2, 1: 2, 2: 1}
assert hvd.local_size() == host_sizes[hvd.rank()], hvd.local_size()
assert hvd.local_rank() == {0: 0, 1: 1, 2: 0}[hvd.rank()]
assert hvd.is_homogeneous() is False
print(f"rank {hvd.rank()}: layout ok")
hvd.shutdown()
