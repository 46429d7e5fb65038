"""A data-parallel PyTorch job the daemons know nothing about, for the
zero-configuration tests: nothing in it mentions clairfs.

  report_train.py --data ROOT --dataset imagefolder|twice --sampler distributed|random
                  [--epochs N] [--workers W] [--batch-size B] [--seed S] --log FILE

imagefolder: torchvision's ImageFolder whose loader returns the sha1 of the
file's bytes. twice: a Dataset of its own (no .samples) whose __getitem__
opens its file twice, once for a header and once for the whole file.
distributed: DistributedSampler(seed=S) with set_epoch; random: a
RandomSampler without a seed (every rank reads the whole dataset in an order
drawn from torch's global generator). Each rank appends "epoch path sha1"
per sample to FILE.rankR, and "rng X" (a draw after the last epoch) so that
runs with and without the reporter can be compared.
"""
import argparse
import hashlib
import os
import time

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, RandomSampler
from torch.utils.data.distributed import DistributedSampler
from torchvision.datasets import ImageFolder


def sha1_of(path):
    with open(path, "rb") as f:
        return hashlib.sha1(f.read()).hexdigest()


class Twice(Dataset):
    """Every file under root, sorted; a sample opens its file twice."""

    def __init__(self, root):
        self.root = root
        self.files = sorted(
            os.path.relpath(os.path.join(d, n), root)
            for d, _, names in os.walk(root) for n in names)

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        path = os.path.join(self.root, self.files[i])
        with open(path, "rb") as f:
            f.read(16)  # a header check, as decoders do
        return self.files[i], sha1_of(path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--dataset", choices=["imagefolder", "twice"], required=True)
    ap.add_argument("--sampler", choices=["distributed", "random"], required=True)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--step-ms", type=float, default=5, help="compute per batch")
    ap.add_argument("--log", required=True)
    a = ap.parse_args()
    rank, world = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
    if world > 1:
        dist.init_process_group("gloo")
    torch.manual_seed(a.seed + rank)
    if a.dataset == "imagefolder":
        data = ImageFolder(a.data, loader=sha1_of)
    else:
        data = Twice(a.data)
    if a.sampler == "distributed":
        sampler = DistributedSampler(data, num_replicas=world, rank=rank, seed=a.seed)
    else:
        sampler = RandomSampler(data)
    loader = DataLoader(data, batch_size=a.batch_size, sampler=sampler, num_workers=a.workers)
    with open("%s.rank%d" % (a.log, rank), "w") as log:
        for epoch in range(a.epochs):
            if a.sampler == "distributed":
                sampler.set_epoch(epoch)
            for batch in loader:
                if a.dataset == "imagefolder":
                    digests, _ = batch
                    # ImageFolder gives no paths: the sha1 is checked against
                    # the set of the source's files.
                    for d in digests:
                        log.write("%d - %s\n" % (epoch, d))
                else:
                    names, digests = batch
                    for n, d in zip(names, digests):
                        log.write("%d %s %s\n" % (epoch, n, d))
                time.sleep(a.step_ms / 1000)
            if world > 1:
                dist.barrier()
        log.write("rng %r\n" % torch.rand(1).item())


if __name__ == "__main__":
    main()
