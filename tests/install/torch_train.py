"""A minimal Horovod training script, as a newcomer writes one: a linear
model fitted to y = 3x - 1 on each rank's half of the data."""

import torch

import horovod.torch as hvd

hvd.init()
torch.manual_seed(0)
x = torch.linspace(-1, 1, 64).view(-1, 1)
y = 3 * x - 1
mine = slice(hvd.rank(), None, hvd.size())
model = torch.nn.Linear(1, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
optimizer = hvd.DistributedOptimizer(
    optimizer, named_parameters=model.named_parameters())
hvd.broadcast_parameters(model.state_dict(), root_rank=0)
hvd.broadcast_optimizer_state(optimizer, root_rank=0)
for step in range(50):
    optimizer.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x[mine]), y[mine])
    loss.backward()
    optimizer.step()
loss = hvd.allreduce(loss.detach(), name="final_loss")
weights = hvd.allgather(model.weight.detach().view(1, 1))
assert torch.allclose(weights, weights[0].expand_as(weights)), weights
assert loss.item() < 1e-3, loss.item()
print(f"rank {hvd.rank()}: torch {torch.__version__.split('+')[0]}, loss "
      f"{loss.item():.2e}, weight {model.weight.item():.3f}, bias "
      f"{model.bias.item():.3f}")
