#!/usr/bin/env python3
"""Times one synthetic training step two ways in one job: horovod.torch's
DistributedOptimizer, and torch.nn.parallel.DistributedDataParallel over
torch.distributed's gloo backend. Same model, batch, data, optimizer and
threads; the two alternate round by round so both see the same machine.

    horovodrun -np 2 python3 examples/torch/pytorch_ddp_comparison.py \\
        --model resnet18 --image-size 64 --batch-size 16

Prints images/sec per rank for each and the ratio horovod / DDP (the mean
of the two, and the median of the round-by-round ratios, which drifts less
when the machine is shared). A third contender, 'local', trains with no
communication at all: the gap between it and the others is what their
gradient exchange costs.
"""

import argparse
import copy
import os
import socket
import timeit

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torchvision import models

import horovod.torch as hvd


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument('--model', default='resnet18', help='torchvision model name')
    parser.add_argument('--batch-size', type=int, default=16, help='batch size per rank')
    parser.add_argument('--image-size', type=int, default=64)
    parser.add_argument('--num-classes', type=int, default=1000)
    parser.add_argument('--num-warmup-batches', type=int, default=3)
    parser.add_argument('--num-batches-per-round', type=int, default=5)
    parser.add_argument('--num-rounds', type=int, default=5)
    parser.add_argument('--threads', type=int, default=0,
                        help='torch threads per rank (0: the host\'s cores / ranks on it)')
    parser.add_argument('--master-addr', default='',
                        help='address of rank 0 for gloo (default: its host name)')
    return parser.parse_args()


def free_port():
    with socket.socket() as s:
        s.bind(('', 0))
        return s.getsockname()[1]


def init_gloo(args):
    """Starts torch.distributed with the ranks Horovod has, rank 0 choosing
    the rendezvous address."""
    if hvd.rank() == 0:
        address = (args.master_addr or socket.gethostname(), free_port())
    else:
        address = None
    host, port = hvd.broadcast_object(address, root_rank=0, name='gloo_address')
    dist.init_process_group('gloo', init_method='tcp://%s:%d' % (host, port),
                            rank=hvd.rank(), world_size=hvd.size())


def main():
    args = parse_args()
    hvd.init()
    torch.set_num_threads(args.threads or max(1, (os.cpu_count() or 1) // hvd.local_size()))
    init_gloo(args)

    torch.manual_seed(0)
    base = getattr(models, args.model)(num_classes=args.num_classes)
    data = torch.randn(args.batch_size, 3, args.image_size, args.image_size)
    target = torch.randint(0, args.num_classes, (args.batch_size,))

    hvd_model = copy.deepcopy(base)
    hvd_opt = hvd.DistributedOptimizer(torch.optim.SGD(hvd_model.parameters(), lr=0.01),
                                       named_parameters=hvd_model.named_parameters())
    hvd.broadcast_parameters(hvd_model.state_dict(), root_rank=0)

    ddp_model = torch.nn.parallel.DistributedDataParallel(copy.deepcopy(base))
    ddp_opt = torch.optim.SGD(ddp_model.parameters(), lr=0.01)

    def step(model, opt):
        def run():
            opt.zero_grad()
            F.cross_entropy(model(data), target).backward()
            opt.step()
        return run

    local_model = copy.deepcopy(base)
    local_opt = torch.optim.SGD(local_model.parameters(), lr=0.01)

    runs = {'horovod': step(hvd_model, hvd_opt), 'ddp': step(ddp_model, ddp_opt),
            'local': step(local_model, local_opt)}
    for run in runs.values():
        timeit.timeit(run, number=args.num_warmup_batches)

    rates = {name: [] for name in runs}
    for _ in range(args.num_rounds):
        for name, run in runs.items():
            hvd.barrier()
            elapsed = timeit.timeit(run, number=args.num_batches_per_round)
            rates[name].append(args.batch_size * args.num_batches_per_round / elapsed)

    # Each rank's rates, averaged over ranks, round by round.
    per_round = hvd.allreduce(torch.tensor([rates[name] for name in runs], dtype=torch.float64),
                              name='ddp_comparison.rates')
    means = per_round.mean(dim=1)
    round_ratios = per_round[0] / per_round[1]
    if hvd.rank() == 0:
        print('Model: %s, image size %d, batch size %d per rank, %d ranks, %d threads each'
              % (args.model, args.image_size, args.batch_size, hvd.size(),
                 torch.get_num_threads()))
        for i, name in enumerate(runs):
            print('%-8s %.1f img/sec per rank (rounds: %s), total %.1f'
                  % (name, means[i], ' '.join('%.1f' % r for r in per_round[i].tolist()),
                     means[i] * hvd.size()))
        print('exchange cost per step: horovod %.1f ms, ddp %.1f ms'
              % tuple(1000 * args.batch_size * (1 / means[i] - 1 / means[2]) for i in (0, 1)))
        print('ratio horovod / ddp: %.3f (median of rounds %.3f)'
              % (means[0] / means[1], round_ratios.median()))
    dist.destroy_process_group()


if __name__ == '__main__':
    main()
