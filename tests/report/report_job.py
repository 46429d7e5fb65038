"""A small training-style job for the reporter's tests: runs DataLoaders as configured and
writes what it got (batch indices, per-sample random draws, torch.rand after the loops).

usage: report_job.py DATA_DIR OUT.json CONFIGS_JSON [SEED]
Each config: {"data": "folder"|"custom", "sampler": "random"|"gen"|"dist"|"seq",
"workers": N, "ctx": "fork"|"spawn"|null, "persistent": bool, "epochs": E, "batch": B}.
"""
import json
import os
import sys

import torch
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler
from torchvision import datasets, transforms


class IndexedFolder(datasets.ImageFolder):
    """ImageFolder whose samples carry their index and a draw of the loader process's RNG."""

    def __getitem__(self, index):
        img, target = super().__getitem__(index)
        return index, torch.rand(()), img.sum(), target


class TwiceOpened(Dataset):
    """Opens each of its files twice, by builtins.open and os.open."""

    def __init__(self, root):
        self.files = sorted(os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs)

    def __len__(self):
        return len(self.files)

    def __getitem__(self, index):
        with open(self.files[index], "rb") as f:
            a = f.read()
        fd = os.open(self.files[index], os.O_RDONLY)
        try:
            b = os.read(fd, 1 << 20)
        finally:
            os.close(fd)
        assert a == b
        return index, torch.rand(()), float(len(a)), 0


def run(data, cfg):
    if cfg["data"] == "folder":
        ds = IndexedFolder(data, transform=transforms.ToTensor())
    else:
        ds = TwiceOpened(data)
    kw = dict(batch_size=cfg.get("batch", 4), num_workers=cfg["workers"])
    if cfg["workers"]:
        kw["persistent_workers"] = cfg.get("persistent", False)
        if cfg.get("ctx"):
            kw["multiprocessing_context"] = cfg["ctx"]
    sampler = None
    if cfg["sampler"] == "random":
        kw["shuffle"] = True
    elif cfg["sampler"] == "gen":
        kw["shuffle"] = True
        kw["generator"] = torch.Generator().manual_seed(7)
    elif cfg["sampler"] == "dist":
        sampler = kw["sampler"] = DistributedSampler(ds, num_replicas=2, rank=1, seed=3)
    loader = DataLoader(ds, **kw)
    epochs, noise = [], []
    for e in range(cfg.get("epochs", 1)):
        if sampler is not None:
            sampler.set_epoch(e)
        batches = []
        for idx, r, _, _ in loader:
            batches.append(idx.tolist())
            noise += r.tolist()
        epochs.append(batches)
    return epochs, noise


def main():
    data, out, configs = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    if len(sys.argv) > 4:
        torch.manual_seed(int(sys.argv[4]))
    result = {"pid": os.getpid(), "loaders": [], "noise": []}
    for cfg in configs:
        epochs, noise = run(data, cfg)
        result["loaders"].append(epochs)
        result["noise"].append(noise)
    result["rand"] = torch.rand(4).tolist()
    with open(out, "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main()
