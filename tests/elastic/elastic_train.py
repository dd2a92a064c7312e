"""An elastic training job for the tests: softmax regression on
scikit-learn's digits in float64, one commit a step, under
hvd.elastic.run with a TorchState and an ElasticSampler.

    elastic_train.py LOG_DIR EPOCHS BATCH [STEP_SECONDS]

Each worker writes to LOG_DIR/<host>.<slot>.log, one line an event, the
last field the wall-clock time:
    pid P T                          at start
    world W rank R size S step N T   after each move to a world (after sync)
    committed N T                    after each commit is saved
    error T                          when a collective failed
and at the end `final W` then the model's parameters (rank 0 also writes
LOG_DIR/history.json: per committed step, the epoch, world and size)."""

import json
import os
import sys
import time

import torch
from sklearn.datasets import load_digits

import horovod.torch as hvd

log_dir, epochs, batch = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
step_seconds = float(sys.argv[4]) if len(sys.argv) > 4 else 0.0
torch.set_num_threads(1)
worker = f"{os.environ['HOROVOD_HOSTNAME']}.{os.environ['HOROVOD_ELASTIC_SLOT']}"
log_file = open(os.path.join(log_dir, worker + ".log"), "a", buffering=1)


def note(text):
    log_file.write(f"{text} {time.time():.6f}\n")


note(f"pid {os.getpid()}")
hvd.init()

digits = load_digits()
features = torch.tensor(digits.data / 16.0, dtype=torch.float64)
labels = torch.tensor(digits.target, dtype=torch.int64)
dataset = torch.utils.data.TensorDataset(features, labels)

torch.manual_seed(0)
model = torch.nn.Linear(64, 10).double()
optimizer = hvd.DistributedOptimizer(
    torch.optim.SGD(model.parameters(), lr=0.5),
    named_parameters=model.named_parameters())
sampler = hvd.elastic.ElasticSampler(dataset, shuffle=True, seed=7)
state = hvd.elastic.TorchState(model, optimizer, sampler=sampler, epoch=0,
                               step=0, history=[])


def world_epoch():
    return int(os.environ.get("HOROVOD_WORLD_EPOCH", "0"))


@hvd.elastic.run
def train(state):
    note(f"world {world_epoch()} rank {hvd.rank()} size {hvd.size()} "
         f"step {state.step}")
    try:
        run_epochs(state)
    except hvd.HorovodInternalError:
        note("error")
        raise


def run_epochs(state):
    while state.epoch < epochs:
        loader = torch.utils.data.DataLoader(dataset, batch_size=batch,
                                             sampler=state.sampler)
        for batch_idx, (x, y) in enumerate(loader):
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            if step_seconds:
                time.sleep(step_seconds)
            state.sampler.record_batch(batch_idx, batch)
            state.step += 1
            state.history.append((state.epoch, world_epoch(), hvd.size()))
            state.commit()
            note(f"committed {state.step}")
        state.epoch += 1
        state.sampler.set_epoch(state.epoch)
        state.commit()


train(state)
params = [p.detach().flatten().tolist() for p in model.parameters()]
log_file.write(f"final {world_epoch()} {json.dumps(params)}\n")
if hvd.rank() == 0:
    with open(os.path.join(log_dir, "history.json"), "w") as f:
        json.dump(state.history, f)
hvd.shutdown()
