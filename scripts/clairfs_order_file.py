#!/usr/bin/python3
"""Write a clairfs order file from PyTorch sampler objects, without loading data.

An order file (docs/order.md) lists, per epoch and rank, the files a training
process opens, in order. This helper iterates real sampler objects - anything
that yields dataset indices (or batches of them, like a BatchSampler) - once
per epoch, calling set_epoch(epoch) when the sampler has it, and maps each
index to a path relative to the dataset root. No sample is ever loaded: only
the sampler runs.

As a module:

    import clairfs_order_file as cof
    ds = torchvision.datasets.ImageFolder(root)            # lists files only
    samplers = {r: DistributedSampler(ds, num_replicas=4, rank=r, seed=7)
                for r in range(4)}
    cof.write_order_file("order.txt",
                         cof.sections_from_samplers(samplers, epochs=range(3),
                                                    paths=cof.dataset_paths(ds)),
                         world_size=4)

Iterating a sampler advances any generator it holds (RandomSampler with a
generator): give the helper its own, freshly seeded sampler, not the one the
training loop will use. DataLoader(shuffle=True, generator=g) also draws a base
seed from g whenever an epoch starts; sections_from_loader() reproduces that.

As a command (uses torchvision.datasets.ImageFolder or a listing file):

    clairfs_order_file.py --root DIR --sampler distributed --world-size 4 \
        --seed 7 --epochs 3 -o order.txt
    clairfs_order_file.py --root DIR --factory mymod:make_sampler ...

where make_sampler(dataset, rank, world_size) returns a sampler for that rank.
Needs PyTorch (Debian: python3-torch, python3-torchvision; run /usr/bin/python3).
"""

import argparse
import importlib
import os
import sys

MAGIC = "# clairfs-order v1"


def dataset_paths(dataset, root=None):
    """Relative paths by dataset index: from an ImageFolder/DatasetFolder's
    `samples` (relative to `root`, default dataset.root) or from a list of paths
    (returned unchanged when root is None)."""
    if hasattr(dataset, "samples"):
        base = root if root is not None else dataset.root
        return [os.path.relpath(path, base) for path, _ in dataset.samples]
    items = list(dataset)
    if root is None:
        return [str(p) for p in items]
    return [os.path.relpath(str(p), root) for p in items]


def _flatten(sampler):
    """The indices one pass over `sampler` yields; batches are flattened."""
    out = []
    for item in sampler:
        if isinstance(item, (list, tuple)):
            out.extend(int(i) for i in item)
        elif hasattr(item, "tolist") and not isinstance(item, int):
            value = item.tolist()
            out.extend(value if isinstance(value, list) else [value])
        else:
            out.append(int(item))
    return out


def sampler_epochs(sampler, epochs, set_epoch=True):
    """Yields (epoch, indices) for each epoch in `epochs`, in that order."""
    for epoch in epochs:
        if set_epoch and hasattr(sampler, "set_epoch"):
            sampler.set_epoch(epoch)
        yield epoch, _flatten(sampler)


def loader_epochs(loader, epochs):
    """Like sampler_epochs for a DataLoader's index stream, without workers or
    data: per epoch the DataLoader first draws its worker base seed from
    loader.generator (once only with persistent workers), then runs its
    (batch) sampler. The epochs are assumed to be 0, 1, 2, ... in order."""
    import torch

    persistent = loader.persistent_workers and loader.num_workers > 0
    sampler = loader.batch_sampler if loader.batch_sampler is not None else loader.sampler
    for count, epoch in enumerate(epochs):
        if count == 0 or not persistent:
            torch.empty((), dtype=torch.int64).random_(generator=loader.generator)
        yield epoch, _flatten(sampler)


def _entries(indices, paths):
    if paths is None:
        return [int(i) for i in indices]
    return [paths[i] for i in indices]


def sections_from_samplers(samplers, epochs, paths=None, set_epoch=True):
    """{(epoch, rank): entries} from {rank: sampler} (or a list by rank).
    Entries are paths when `paths` (index -> path) is given, else indices."""
    if not isinstance(samplers, dict):
        samplers = dict(enumerate(samplers))
    epochs = list(epochs)
    sections = {}
    for rank, sampler in sorted(samplers.items()):
        for epoch, indices in sampler_epochs(sampler, epochs, set_epoch):
            sections[(epoch, rank)] = _entries(indices, paths)
    return sections


def sections_from_loader(loader, epochs, paths=None, rank=0):
    """{(epoch, rank): entries} for one DataLoader (see loader_epochs)."""
    return {(epoch, rank): _entries(indices, paths)
            for epoch, indices in loader_epochs(loader, list(epochs))}


def format_order_file(sections, entries="paths", world_size=None, layout=None):
    """The order file text. `layout` ("image-folder" or "list") says what an
    index file's indices count in. Raises ValueError for a path the format
    cannot hold (empty, starting with '#', or containing a newline)."""
    if entries not in ("paths", "indices"):
        raise ValueError("entries must be 'paths' or 'indices'")
    if layout not in (None, "image-folder", "list"):
        raise ValueError("layout must be 'image-folder' or 'list'")
    lines = [MAGIC, "# entries " + entries]
    if world_size is not None:
        lines.append("# world-size %d" % world_size)
    if layout is not None:
        lines.append("# layout " + layout)
    for (epoch, rank) in sorted(sections):
        if world_size is not None and rank >= world_size:
            raise ValueError("rank %d is outside world size %d" % (rank, world_size))
        lines.append("# epoch %d rank %d" % (epoch, rank))
        for entry in sections[(epoch, rank)]:
            entry = str(entry)
            if not entry or entry.startswith("#") or "\n" in entry:
                raise ValueError("epoch %d rank %d: %r cannot be written to an order file"
                                 % (epoch, rank, entry))
            lines.append(entry)
    return "\n".join(lines) + "\n"


def write_order_file(out, sections, world_size=None, layout=None):
    """Writes `sections` to `out` (a path or a text file object). Python int
    entries make an index order file (declaring `layout` when given), strings
    a path order file."""
    values = [e for v in sections.values() for e in v]
    kind = "indices" if values and all(isinstance(e, int) for e in values) else "paths"
    text = format_order_file(sections, kind, world_size, layout if kind == "indices" else None)
    if hasattr(out, "write"):
        out.write(text)
    else:
        # Paths are bytes in the file system; surrogateescape keeps undecodable names intact.
        with open(out, "w", encoding="utf-8", errors="surrogateescape", newline="\n") as f:
            f.write(text)


def _build_dataset(args):
    if args.listing:
        with open(args.listing, encoding="utf-8", errors="surrogateescape") as f:
            return [line.rstrip("\n") for line in f if line.strip("\n")], None
    import torchvision

    ds = torchvision.datasets.ImageFolder(args.root)
    return ds, dataset_paths(ds, args.root)


def _build_sampler(args, dataset, rank):
    import torch
    from torch.utils.data import DistributedSampler, RandomSampler, SequentialSampler

    if args.factory:
        module, _, func = args.factory.partition(":")
        return getattr(importlib.import_module(module), func)(dataset, rank, args.world_size)
    if args.sampler == "distributed":
        return DistributedSampler(dataset, num_replicas=args.world_size, rank=rank,
                                  seed=args.seed, shuffle=not args.no_shuffle,
                                  drop_last=args.drop_last)
    if args.sampler == "random":
        g = torch.Generator()
        g.manual_seed(args.generator_seed)
        return RandomSampler(dataset, generator=g)
    return SequentialSampler(dataset)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--root", help="ImageFolder root (torchvision lists it)")
    src.add_argument("--listing", help="file with one dataset path per line, in index order")
    p.add_argument("--sampler", choices=("distributed", "random", "sequential"),
                   default="distributed")
    p.add_argument("--factory", help="MODULE:FUNC returning a sampler for (dataset, rank, world_size)")
    p.add_argument("--world-size", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--generator-seed", type=int, default=0)
    p.add_argument("--drop-last", action="store_true")
    p.add_argument("--no-shuffle", action="store_true")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--start-epoch", type=int, default=0)
    p.add_argument("--indices", action="store_true", help="write dataset indices, not paths")
    p.add_argument("-o", "--output", required=True, help="order file to write ('-' = stdout)")
    args = p.parse_args(argv)
    if args.world_size < 1 or args.epochs < 1 or args.start_epoch < 0:
        p.error("--world-size and --epochs must be >= 1, --start-epoch >= 0")
    if args.sampler == "random" and args.world_size != 1 and not args.factory:
        p.error("--sampler random has one consumer: use --world-size 1")

    dataset, paths = _build_dataset(args)
    if paths is None:
        paths = list(dataset)
    samplers = {r: _build_sampler(args, dataset, r) for r in range(args.world_size)}
    epochs = range(args.start_epoch, args.start_epoch + args.epochs)
    sections = sections_from_samplers(samplers, epochs, None if args.indices else paths)
    # The indices count in the ImageFolder's samples, or in the listing (which
    # the daemon reads as the dataset's files sorted by path).
    layout = "list" if args.listing else "image-folder"
    try:
        write_order_file(sys.stdout if args.output == "-" else args.output, sections,
                         args.world_size, layout)
    except (ValueError, OSError) as e:
        print("clairfs_order_file: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
