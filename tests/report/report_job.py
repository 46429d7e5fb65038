"""A small training-style job for the reporter's tests: runs DataLoaders as configured and
writes what it got (batch indices, files, per-sample random draws, torch.rand after the loops).

usage: report_job.py DATA_DIR OUT.json CONFIGS_JSON [SEED]
Each config (defaults in brackets):
  data: "folder" (ImageFolder) | "custom" (a Dataset opening each file twice) | "subset"
        (Subset of odd indices of an ImageFolder) | "concat" (ConcatDataset of an
        ImageFolder and a "subset") | "dsfolder" (DatasetFolder, own loader) | "iterable" (IterableDataset)
        | "keyed" (a Dataset keyed by file names)
  sampler: ["none": DataLoader's own] "random" (shuffle=True) | "gen" (shuffle=True on a
        seeded generator) | "dist" | "dist-noshuffle" | "seq" | "weighted" (with
        replacement, 30 draws) | "weighted-norep" | "subset" | "mine" (a Sampler drawing
        lazily from torch's global generator) | "mine-nolen" | "endless" (an infinite Sampler)
        | "huge" (RandomSampler with replacement, 10^12 samples) | "random-rep" (the same,
        30 samples) | "random-more" (RandomSampler, 30 samples without replacement) |
        "random-more-gen" (the same on a seeded generator) | "list" (a list of indices) |
        "negative" (SubsetRandomSampler of negative indices) | "keys" (SubsetRandomSampler of
        names)
  batch_sampler: [none] "batch" (BatchSampler over the sampler, RandomSampler if none)
        | "mine" (a batch sampler class of the job's yielding lists)
  workers [0], ctx [default] "fork"|"spawn", persistent [false], epochs [1], batch [4; null
  for batch_size=None], drop_last [false], set_epoch [true], break [none: N batches read
  of the first epoch, or of every epoch for endless/huge], val [false: a second DataLoader
  over the same dataset, read after each epoch], peek [false: len(loader) and iter(loader)
  unread before the epochs], init [false: a worker_init_fn drawing from torch and random],
  loader_gen [none: generator=torch.Generator().manual_seed(N)], prefetch [2], pin [false].
A loader's record: its epochs' batches of indices ("loaders"), the files of each epoch in
order ("files"), the random draws of its samples ("noise"); a val loader's come right after.
"""
import json
import os
import random
import sys

import torch
from PIL import Image
from torch.utils.data import (BatchSampler, ConcatDataset, DataLoader, Dataset, IterableDataset,
                              RandomSampler, Sampler, SequentialSampler, Subset,
                              SubsetRandomSampler, WeightedRandomSampler, get_worker_info)
from torch.utils.data.distributed import DistributedSampler
from torchvision import datasets, transforms



def rel(path):
    """A file as the output names it: relative to the data directory's parent (main() sets
    it in the environment, which spawned workers inherit)."""
    return os.path.relpath(path, os.environ["REPORT_JOB_ROOT"])


class IndexedFolder(datasets.ImageFolder):
    """ImageFolder whose samples carry their index, file and a draw of the process's RNG."""

    def __getitem__(self, index):
        img, target = super().__getitem__(index)
        assert img.numel() > 0
        return index, torch.rand(()), rel(self.samples[index][0]), target


def gray_loader(path):
    with open(path, "rb") as f:
        return Image.open(f).convert("L")


class IndexedDatasetFolder(datasets.DatasetFolder):
    def __init__(self, root):
        super().__init__(root, loader=gray_loader, extensions=(".png",))

    def __getitem__(self, index):
        img, target = super().__getitem__(index)
        return index, torch.rand(()), rel(self.samples[index][0]), target


def files_of(root):
    return sorted(os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs)


def read_twice(path):
    with open(path, "rb") as f:
        a = f.read()
    fd = os.open(path, os.O_RDONLY)
    try:
        b = os.read(fd, 1 << 20)
    finally:
        os.close(fd)
    assert a == b
    return len(a)


class TwiceOpened(Dataset):
    """Opens each of its files twice, by builtins.open and os.open."""

    def __init__(self, root):
        self.files = files_of(root)

    def __len__(self):
        return len(self.files)

    def __getitem__(self, index):
        read_twice(self.files[index])
        return index, torch.rand(()), rel(self.files[index]), 0


class Keyed(Dataset):
    """A map-style dataset whose keys are file names, not integers."""

    def __init__(self, root):
        self.files = {rel(p): p for p in files_of(root)}

    def __len__(self):
        return len(self.files)

    def __getitem__(self, key):
        read_twice(self.files[key])
        return -1, torch.rand(()), key, 0


class Streamed(IterableDataset):
    """The files in order, split between the workers."""

    def __init__(self, root):
        self.files = files_of(root)

    def __iter__(self):
        w = get_worker_info()
        k, n = (w.id, w.num_workers) if w is not None else (0, 1)
        for i in range(k, len(self.files), n):
            read_twice(self.files[i])
            yield i, torch.rand(()), rel(self.files[i]), 0


class Mine(Sampler):
    """A user's sampler: draws each index lazily from torch's global generator."""

    def __init__(self, n, count):
        self.n, self.count = n, count

    def __iter__(self):
        for _ in range(self.count):
            yield int(torch.randint(self.n, ()))

    def __len__(self):
        return self.count


class MineNoLen(Sampler):
    def __init__(self, n, count):
        self.n, self.count = n, count

    def __iter__(self):
        return Mine.__iter__(self)


class Endless(Sampler):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        while True:
            yield int(torch.randint(self.n, ()))


class MyBatches:
    """A user's batch sampler: a permutation from the global generator, in lists of 3 and 2."""

    def __init__(self, n):
        self.n = n

    def __iter__(self):
        order = torch.randperm(self.n).tolist()
        while order:
            k = 3 if len(order) % 2 else 2
            yield order[:k]
            order = order[k:]

    def __len__(self):
        return (self.n + 2) // 3


def dataset(data, kind):
    if kind == "folder":
        return IndexedFolder(data, transform=transforms.ToTensor())
    if kind == "subset":
        return Subset(IndexedFolder(data, transform=transforms.ToTensor()), list(range(1, 21, 2)))
    if kind == "concat":
        return ConcatDataset([IndexedFolder(data, transform=transforms.ToTensor()),
                              dataset(data, "subset")])
    if kind == "dsfolder":
        return IndexedDatasetFolder(data)
    if kind == "iterable":
        return Streamed(data)
    if kind == "keyed":
        return Keyed(data)
    return TwiceOpened(data)


def sampler_of(ds, name):
    n = len(ds) if name != "none" else 0
    weights = [1.0 + (i % 3) for i in range(n)]
    return {
        "none": lambda: None,
        "seq": lambda: SequentialSampler(ds),
        "dist": lambda: DistributedSampler(ds, num_replicas=2, rank=1, seed=3),
        "dist-noshuffle": lambda: DistributedSampler(ds, num_replicas=2, rank=1, shuffle=False),
        "weighted": lambda: WeightedRandomSampler(weights, 30),
        "weighted-norep": lambda: WeightedRandomSampler(weights, n - 3, replacement=False),
        "subset": lambda: SubsetRandomSampler(list(range(0, n, 2))),
        "mine": lambda: Mine(n, n),
        "mine-nolen": lambda: MineNoLen(n, n),
        "endless": lambda: Endless(n),
        "huge": lambda: RandomSampler(ds, replacement=True, num_samples=10 ** 12),
        "random-rep": lambda: RandomSampler(ds, replacement=True, num_samples=30),
        "random-more": lambda: RandomSampler(ds, num_samples=30),
        "random-more-gen": lambda: RandomSampler(ds, num_samples=30,
                                                 generator=torch.Generator().manual_seed(4)),
        "list": lambda: list(range(n - 1, -1, -3)),
        "negative": lambda: SubsetRandomSampler(list(range(-1, -n, -2))),
        "keys": lambda: SubsetRandomSampler(sorted(ds.files)),
    }[name]()


def worker_init(worker_id):
    random.seed(worker_id)
    torch.rand(3)


def make_loader(ds, cfg):
    name = cfg.get("sampler", "none")
    kw = dict(num_workers=cfg.get("workers", 0))
    if kw["num_workers"]:
        kw["persistent_workers"] = cfg.get("persistent", False)
        kw["prefetch_factor"] = cfg.get("prefetch", 2)
        if cfg.get("ctx"):
            kw["multiprocessing_context"] = cfg["ctx"]
        if cfg.get("init"):
            kw["worker_init_fn"] = worker_init
    if "loader_gen" in cfg:
        kw["generator"] = torch.Generator().manual_seed(cfg["loader_gen"])
    kw["pin_memory"] = cfg.get("pin", False)
    if name in ("random", "gen"):
        sampler = None
        kw["shuffle"] = True
        if name == "gen":
            kw["generator"] = torch.Generator().manual_seed(7)
    else:
        sampler = sampler_of(ds, name)
    batch, drop_last = cfg.get("batch", 4), cfg.get("drop_last", False)
    if cfg.get("batch_sampler") == "mine":
        kw["batch_sampler"] = MyBatches(len(ds))
    elif cfg.get("batch_sampler") == "batch":
        kw.pop("shuffle", None)
        inner = sampler if sampler is not None else RandomSampler(ds, generator=kw.pop(
            "generator", None))
        kw["batch_sampler"] = BatchSampler(inner, batch, drop_last)
    else:
        kw.update(sampler=sampler, batch_size=batch, drop_last=drop_last)
    return DataLoader(ds, **kw), sampler


def read_epoch(loader, stop, record):
    batches, files, noise = [], [], []
    for n, (idx, r, path, _) in enumerate(loader):
        if stop is not None and n == stop:
            break
        if isinstance(path, str):  # batch_size=None: one sample
            idx, r, path = [int(idx)], [float(r)], [path]
        else:
            idx, r = idx.tolist(), r.tolist()
        batches.append(idx)
        files += path
        noise += r
    record["loaders"].append(batches)
    record["files"].append(files)
    record["noise"] += noise


def run(data, cfg):
    ds = dataset(data, cfg["data"])
    loader, sampler = make_loader(ds, cfg)
    val = DataLoader(ds, batch_size=5) if cfg.get("val") else None
    if cfg.get("peek"):
        len(loader)  # noqa: the job asks, reads nothing
        iter(loader)
    train = {"loaders": [], "files": [], "noise": []}
    other = {"loaders": [], "files": [], "noise": []}
    endless = cfg.get("sampler") in ("endless", "huge")
    for e in range(cfg.get("epochs", 1)):
        if hasattr(sampler, "set_epoch") and cfg.get("set_epoch", True):
            sampler.set_epoch(e)
        read_epoch(loader, cfg.get("break") if e == 0 or endless else None, train)
        if val is not None:
            read_epoch(val, None, other)
    out = [(train["loaders"], train["files"], train["noise"])]
    if val is not None:
        out.append((other["loaders"], other["files"], other["noise"]))
    return out


def main():
    data, out, configs = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    os.environ["REPORT_JOB_ROOT"] = os.path.dirname(os.path.abspath(data))
    if len(sys.argv) > 4:
        torch.manual_seed(int(sys.argv[4]))
        random.seed(int(sys.argv[4]))
    result = {"pid": os.getpid(), "loaders": [], "files": [], "noise": []}
    for cfg in configs:
        for epochs, files, noise in run(data, cfg):
            result["loaders"].append(epochs)
            result["files"].append(files)
            result["noise"].append(noise)
    result["rand"] = torch.rand(4).tolist()
    result["random"] = random.random()
    with open(out, "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main()
