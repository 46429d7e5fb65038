"""Datasets as tables: index -> file(s), keyed for the daemon (docs/report.md).

A dataset with a `.samples` (or `.imgs`) list of (path, target), as torchvision's
ImageFolder/DatasetFolder, is a *paths* table: its paths go out once as TABLE_PATHS, and so
is a ConcatDataset of such (or of Subsets of such). A torch Subset is seen through to its
dataset (its indices mapped). Any other map-style dataset
is a *learned* table: the files each index opens are learned where it is fetched
(clairfs_report.learn). A table lives in this process's registry as long as its dataset.
Single-thread use (the thread that starts the loader's epochs).
"""
import operator
import os
import weakref
from itertools import chain

from . import channel, wire

PATHS, LEARNED = "paths", "learned"

_registry = {}   # id(dataset) -> (weak reference, Table)
learned = {}     # id(dataset) -> set of indices whose files were learned (clairfs_report.learn)
_counter = 0
_registry_pid = None
_streams = 0     # loader streams numbered in this process (torch and Keras alike)


class Table:
    def __init__(self, kind, roots, paths=None, key=None):
        global _counter
        _counter += 1
        self.key = key if key is not None else (
            ((os.getpid() & 0x7FFFFFFF) << 32) | (_counter & 0xFFFFFFFF))
        self.kind = kind
        self.roots = roots      # the mounts whose daemons get the orders over this table
        self.paths = paths      # PATHS: encoded entries, sent once (then None)


def subset_chain(ds):
    """(innermost dataset, [index lists, outermost first]) through torch Subsets."""
    from torch.utils.data import Subset
    maps = []
    while isinstance(ds, Subset) and type(ds).__getitem__ is Subset.__getitem__:
        maps.append(ds.indices)
        ds = ds.dataset
    return ds, maps


def map_indices(flat, maps):
    """Sample indices of the outermost Subset -> indices of the inner dataset."""
    for m in maps:
        if hasattr(m, "tolist"):
            m = m.tolist()
        flat = list(map(m.__getitem__, flat))
    return flat


def index_of(key):
    """A dataset key as a table index (int in [0, 2^32)), or None: a name, a float, negative."""
    try:
        i = operator.index(key)
    except TypeError:
        return None
    return i if 0 <= i < 1 << 32 else None


def sample_paths(ds):
    """The file of each index of a dataset, or None if it is not a paths table."""
    from torch.utils.data import ConcatDataset
    if isinstance(ds, ConcatDataset) and type(ds).__getitem__ is ConcatDataset.__getitem__:
        return _concat_paths(ds.datasets)
    samples = getattr(ds, "samples", None)
    if not isinstance(samples, list):
        samples = getattr(ds, "imgs", None)
    if not isinstance(samples, list) or not samples:
        return None
    try:
        paths = [s[0] for s in samples]
    except (TypeError, IndexError, KeyError):
        return None
    if all(isinstance(p, (str, bytes, os.PathLike)) for p in paths):
        return paths
    return None


def _concat_paths(members):
    """A ConcatDataset's files: its members' in turn, if each is a paths table (or a Subset
    of one) exactly as long as the dataset; else None (learned)."""
    paths = []
    for member in members:
        inner, maps = subset_chain(member)
        part = sample_paths(inner)
        if part is None:
            return None
        for m in reversed(maps):  # innermost first: part[i] is member[i]'s file
            part = [part[j] for j in (m.tolist() if hasattr(m, "tolist") else m)]
        if len(part) != len(member):
            return None
        paths += part
    return paths


def _path_attrs(ds):
    """Path-like values among a dataset's attributes (first element of lists), for roots."""
    found = []
    for v in getattr(ds, "__dict__", {}).values():
        if isinstance(v, (list, tuple)) and v:
            v = v[0]
        if isinstance(v, (str, os.PathLike)):
            try:
                p = os.fspath(v)
                if os.path.isabs(p) or os.path.exists(p):
                    found.append(p)
            except (TypeError, ValueError, OSError):
                pass
    return found


def _fingerprint_key(ds):
    """A key that every process of the job computes alike for the same dataset.

    A learned table is filled by the opens each process sees; the ranks of a
    node each see their own shard, so they must file into one table. The key
    hashes the dataset's class, its length, and its plain attributes (scalars,
    and each sequence's length and first and last few items): the same on
    every rank for a dataset built alike, different for another dataset.
    Python's own hash() is salted per process, so blake2b it is.
    """
    import hashlib
    h = hashlib.blake2b(digest_size=8)
    cls = type(ds)
    h.update(("%s.%s|%d" % (cls.__module__, cls.__qualname__, len(ds))).encode())
    plain = (str, bytes, int, float, bool, type(None))
    for name, v in sorted(getattr(ds, "__dict__", {}).items(), key=lambda kv: kv[0]):
        if isinstance(v, plain) or isinstance(v, os.PathLike):
            h.update(("|%s=%r" % (name, os.fspath(v) if isinstance(v, os.PathLike) else v)).encode(
                "utf-8", "surrogateescape"))
        elif isinstance(v, (list, tuple)):
            ends = list(v[:8]) + list(v[-8:])
            if all(isinstance(x, plain) for x in ends):
                h.update(("|%s[%d]=%r" % (name, len(v), ends)).encode("utf-8", "surrogateescape"))
    # The top bit apart from the per-process keys (pid << 32 | counter).
    return int.from_bytes(h.digest(), "little") | (1 << 63)


def _make(ds, paths_of):
    paths = paths_of(ds)
    if paths is not None:
        located = [channel.locate(p) for p in paths]
        roots = [w[0] for w in located if w is not None]
        if not roots:
            return None  # no file under a clairfs mount: nothing to report
        root = roots[0]
        encoded = [wire.path_bytes(w[1]) if w is not None and w[0] == root else b"\0"
                   for w in located]
        return Table(PATHS, [root], encoded)
    mounts = channel.mounts()
    if not mounts:
        return None
    hints = _path_attrs(ds)
    if hints:
        roots = sorted({w[0] for w in map(channel.locate, hints) if w is not None})
        if not roots:
            return None  # its files are elsewhere
        return Table(LEARNED, roots, key=_fingerprint_key(ds))
    # Cannot tell which mount: every daemon is told.
    return Table(LEARNED, list(mounts), key=_fingerprint_key(ds))


def table_for(ds, paths_of=sample_paths):
    """The Table of an (inner, non-Subset) dataset, made on first use; None: not ours.

    paths_of(ds): its files, one per index, or None (then its files are learned).
    """
    global _registry_pid
    if _registry_pid != os.getpid():  # a forked child makes its own keys
        _registry.clear()
        _registry_pid = os.getpid()
    k = id(ds)
    hit = _registry.get(k)
    if hit is not None:
        return hit[1]
    table = _make(ds, paths_of)
    try:
        ref = weakref.ref(ds, lambda _r, k=k: _forget(k))
    except TypeError:
        ref = ds  # not weakly referenceable: kept alive with its entry
    _registry[k] = (ref, table)
    return table


def _forget(k):
    # the id may now be reused by another dataset: it must not inherit this one's state
    _registry.pop(k, None)
    learned.pop(k, None)


def send_paths(table):
    """TABLE_PATHS of a paths table, once (to its one daemon)."""
    if table.paths is not None:
        channel.send(table.roots[0], wire.table_paths(table.key, table.paths))
        table.paths = None


def new_stream():
    """The next stream id of this process (1, 2, ...), for a loader's ORDER frames."""
    global _streams
    _streams += 1
    return _streams


flatten = chain.from_iterable
