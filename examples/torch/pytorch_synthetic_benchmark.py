#!/usr/bin/env python3
"""Synthetic training benchmark in the shape of Horovod's
pytorch_synthetic_benchmark.py: a torchvision model trained on random data,
reporting images/sec per rank and in total.

    horovodrun -np 2 python3 examples/torch/pytorch_synthetic_benchmark.py \\
        --model resnet18 --image-size 64 --batch-size 16

Defaults suit a CPU host; on GPUs pass --cuda and the usual sizes
(--model resnet50 --image-size 224 --batch-size 32).
"""

import argparse
import os
import timeit

import numpy as np
import torch
import torch.nn.functional as F
import torch.optim as optim
from torchvision import models

import horovod.torch as hvd


def parse_args():
    parser = argparse.ArgumentParser(description='horovod.torch synthetic benchmark',
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument('--fp16-allreduce', action='store_true',
                        help='send gradients as float16')
    parser.add_argument('--model', default='resnet18', help='torchvision model name')
    parser.add_argument('--batch-size', type=int, default=16, help='batch size per rank')
    parser.add_argument('--image-size', type=int, default=64, help='height and width of the images')
    parser.add_argument('--num-classes', type=int, default=1000)
    parser.add_argument('--num-warmup-batches', type=int, default=3,
                        help='batches before timing starts')
    parser.add_argument('--num-batches-per-iter', type=int, default=5,
                        help='batches per timed iteration')
    parser.add_argument('--num-iters', type=int, default=5, help='timed iterations')
    parser.add_argument('--use-adasum', action='store_true',
                        help='combine updates with Adasum instead of averaging')
    parser.add_argument('--cuda', action='store_true', help='train on this rank\'s GPU')
    parser.add_argument('--threads', type=int, default=0,
                        help='torch threads per rank (0: the host\'s cores / ranks on it)')
    return parser.parse_args()


def main():
    args = parse_args()
    hvd.init()
    if args.cuda:
        torch.cuda.set_device(hvd.local_rank())
    torch.set_num_threads(args.threads or max(1, (os.cpu_count() or 1) // hvd.local_size()))
    device = 'cuda' if args.cuda else 'cpu'

    model = getattr(models, args.model)(num_classes=args.num_classes).to(device)
    lr_scaler = 1 if args.use_adasum else hvd.size()
    optimizer = optim.SGD(model.parameters(), lr=0.01 * lr_scaler)
    compression = hvd.Compression.fp16 if args.fp16_allreduce else hvd.Compression.none
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters(),
                                         compression=compression,
                                         op=hvd.Adasum if args.use_adasum else hvd.Average)
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)

    data = torch.randn(args.batch_size, 3, args.image_size, args.image_size, device=device)
    target = torch.randint(0, args.num_classes, (args.batch_size,), device=device)

    def benchmark_step():
        optimizer.zero_grad()
        loss = F.cross_entropy(model(data), target)
        loss.backward()
        optimizer.step()

    def log(text):
        if hvd.rank() == 0:
            print(text, flush=True)

    where = 'GPU' if args.cuda else 'CPU rank'
    log('Model: %s, image size %d' % (args.model, args.image_size))
    log('Batch size: %d' % args.batch_size)
    log('Number of %ss: %d' % (where, hvd.size()))

    log('Running warmup...')
    timeit.timeit(benchmark_step, number=args.num_warmup_batches)

    log('Running benchmark...')
    img_secs = []
    for x in range(args.num_iters):
        elapsed = timeit.timeit(benchmark_step, number=args.num_batches_per_iter)
        img_sec = args.batch_size * args.num_batches_per_iter / elapsed
        log('Iter #%d: %.1f img/sec per %s' % (x, img_sec, where))
        img_secs.append(img_sec)

    img_sec_mean = np.mean(img_secs)
    img_sec_conf = 1.96 * np.std(img_secs)
    log('Img/sec per %s: %.1f +-%.1f' % (where, img_sec_mean, img_sec_conf))
    log('Total img/sec on %d %s(s): %.1f +-%.1f' % (
        hvd.size(), where, hvd.size() * img_sec_mean, hvd.size() * img_sec_conf))


if __name__ == '__main__':
    main()
