#!/usr/bin/env python3
"""An ordinary data-parallel PyTorch training script, written the way users
write them: it knows nothing of clairfs and only takes a data directory.

ImageFolder with real JPEG decoding and standard transforms, DistributedSampler
with set_epoch, a DataLoader with workers, a small CNN, DDP over gloo. Start one
process per rank with RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT set
(scripts/run_ranks.sh does that), as a cluster launcher would.

usage: train.py --data DIR [--epochs E] [--batch-size B] [--workers W] [--seed S]
                [--report FILE.json] [--sample-log FILE]
--sample-log writes "epoch index xxh64-of-file-bytes" per sample read, so a run
can be checked against the source tree byte for byte.
"""
import argparse
import hashlib
import io
import json
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from PIL import Image
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler
from torchvision import datasets, transforms


class SmallNet(nn.Module):
    def __init__(self, classes):
        super().__init__()
        self.c1 = nn.Conv2d(3, 16, 3, padding=1)
        self.c2 = nn.Conv2d(16, 32, 3, padding=1)
        self.c3 = nn.Conv2d(32, 64, 3, padding=1)
        self.fc = nn.Linear(64, classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.c1(x)), 2)
        x = F.max_pool2d(F.relu(self.c2(x)), 2)
        x = F.relu(self.c3(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class LoggingLoader:
    """The default PIL loader, plus one line per file read: its index and hash."""

    def __init__(self, path, index_of):
        self.path = path
        self.index_of = index_of
        self.epoch = 0

    def __call__(self, filename):
        with open(filename, "rb") as f:
            data = f.read()
        with open(self.path, "a") as log:
            log.write("%d %d %s\n" % (self.epoch, self.index_of[filename],
                                      hashlib.blake2b(data, digest_size=8).hexdigest()))
        return Image.open(io.BytesIO(data)).convert("RGB")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True, help="ImageFolder root (class directories)")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--image-size", type=int, default=64)
    ap.add_argument("--report", help="write epoch times and losses here (rank 0)")
    ap.add_argument("--sample-log", help="append per-sample hashes here (one file per rank)")
    ap.add_argument("--preload", action="store_true",
                    help="no I/O while training: read every file into memory first (not timed), "
                         "then decode from memory; the no-I/O baseline of the benchmarks")
    a = ap.parse_args()

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(a.seed)
    torch.set_num_threads(1)

    tf = transforms.Compose([
        transforms.RandomResizedCrop(a.image_size, scale=(0.5, 1.0)),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        transforms.Normalize([0.5, 0.5, 0.5], [0.25, 0.25, 0.25]),
    ])
    dataset = datasets.ImageFolder(a.data, transform=tf)
    if a.preload:
        blobs = {}
        for path, _ in dataset.samples:
            with open(path, "rb") as f:
                blobs[path] = f.read()
        dataset.loader = lambda path: Image.open(io.BytesIO(blobs[path])).convert("RGB")
    loader_fn = None
    if a.sample_log:
        log_path = "%s.rank%d" % (a.sample_log, rank)
        open(log_path, "w").close()
        loader_fn = LoggingLoader(log_path, {p: i for i, (p, _) in enumerate(dataset.samples)})
        dataset.loader = loader_fn
    sampler = DistributedSampler(dataset, num_replicas=world, rank=rank, seed=a.seed)
    loader = DataLoader(dataset, batch_size=a.batch_size, sampler=sampler,
                        num_workers=a.workers, persistent_workers=False)
    model = nn.parallel.DistributedDataParallel(SmallNet(len(dataset.classes)))
    opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=0.9)

    report = {"world_size": world, "samples": len(dataset), "epochs": []}
    for epoch in range(a.epochs):
        sampler.set_epoch(epoch)
        if loader_fn is not None:
            loader_fn.epoch = epoch
        model.train()
        t0 = time.perf_counter()
        wait = 0.0
        total, count = 0.0, 0
        t_batch = time.perf_counter()
        for images, labels in loader:
            wait += time.perf_counter() - t_batch
            opt.zero_grad()
            loss = F.cross_entropy(model(images), labels)
            loss.backward()
            opt.step()
            total += loss.item() * len(labels)
            count += len(labels)
            t_batch = time.perf_counter()
        stats = torch.tensor([total, count, wait], dtype=torch.float64)
        dist.all_reduce(stats)
        seconds = time.perf_counter() - t0
        mean_loss = (stats[0] / stats[1]).item()
        report["epochs"].append({"epoch": epoch, "seconds": seconds, "loss": mean_loss,
                                 "data_wait_seconds": stats[2].item() / world})
        if rank == 0:
            print("epoch %d: %.2f s, loss %.4f, waiting for data %.2f s"
                  % (epoch, seconds, mean_loss, stats[2].item() / world), flush=True)
    if rank == 0 and a.report:
        with open(a.report, "w") as f:
            json.dump(report, f, indent=1)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
