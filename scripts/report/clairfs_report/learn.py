"""Learning which files a dataset index opens, in the process that fetches it.

Around each `dataset[idx]` of torch's map-style fetcher, an audit hook (sys.addaudithook,
installed once and only in a process that learns) collects the "open" events (builtins.open,
io.open, os.open) whose file lies under a clairfs mount. Opens made by C libraries directly
are not audit events and stay invisible. Each index is learned once per process; what a
batch taught goes out as one TABLE_FILES frame per daemon, keyed by:
  - in a loader worker, the iterator key K = key_of(base seed, main pid), which the main
    process aliases to the dataset's table (ALIAS);
  - in the main process (num_workers=0), the dataset's table key itself.
tables.learned is keyed by id(inner dataset); a forked worker inherits the main process's sets,
which the main process fills when an epoch over a learned table has been drawn to its end.
Single-thread per fetcher; the hook ignores other threads. watch()/unwatch() serve a Keras
Sequence of the user's own the same way (clairfs_report.keras_hooks), in fit's reading thread.
"""
import hashlib
import os
import struct
import sys
import threading

from . import channel, guard, tables, wire

_current = None       # [thread id, index, [(root, rel), ...]] while an index is fetched
_watching = {}        # thread id -> such a record, for watch()/unwatch()
_hook_installed = False
_get_ident = threading.get_ident


def key_of(base_seed, main_pid):
    """The key of a loader iterator, computable by its workers (top bit set: never a table)."""
    d = hashlib.blake2b(struct.pack("<QQ", base_seed & (2**64 - 1), main_pid & (2**64 - 1)),
                        digest_size=8).digest()
    return struct.unpack("<Q", d)[0] | (1 << 63)


def _hook(event, args):
    if event != "open":
        return
    c = _current
    if c is None:
        if not _watching:
            return
        c = _watching.get(_get_ident())
        if c is None:
            return
    try:
        if c[0] != _get_ident():
            return
        p = args[0]
        if isinstance(p, (str, bytes, os.PathLike)):
            where = channel.locate(p)
            if where is not None:
                c[2].append(where)
    except Exception:
        pass


def _install_hook():
    global _hook_installed
    if not _hook_installed:
        sys.addaudithook(_hook)
        _hook_installed = True


class _Learner:
    """What a fetcher needs to learn: the dataset chain, the key, the learned set."""
    __slots__ = ("maps", "key", "seen")

    def __init__(self, maps, key, seen):
        self.maps, self.key, self.seen = maps, key, seen


def _worker_key():
    w = sys.modules.get("torch.utils.data._utils.worker")
    info = getattr(w, "_worker_info", None) if w is not None else None
    if info is None:
        return None
    import multiprocessing
    parent = multiprocessing.parent_process()
    main_pid = parent.pid if parent is not None else os.getppid()
    return key_of(info.seed - info.id, main_pid)


def setup(fetcher):
    """A _Learner for a fetcher, or False if it learns nothing (decided once per fetcher)."""
    if not channel.mounts():
        return False
    inner, maps = tables.subset_chain(fetcher.dataset)
    if tables.sample_paths(inner) is not None:
        return False  # a paths table: nothing to learn
    if fetcher.auto_collation and not _plain_getitem(fetcher.dataset):
        return False  # __getitems__ fetches a batch at once: no index to attribute opens to
    key = _worker_key()
    if key is None:  # the main process: only for a dataset whose order it reports
        table = tables.table_for(inner)
        if table is None or table.kind != tables.LEARNED:
            return False
        key = table.key
    for root in channel.mounts():
        channel.socket_name(root)  # read now, not from inside the hook
    _install_hook()
    maps = [m.tolist() if hasattr(m, "tolist") else m for m in maps]
    return _Learner(maps, key, tables.learned.setdefault(id(inner), set()))


def _plain_getitem(ds):
    """True if torch's fetcher calls ds[idx] per index (no __getitems__ on the way)."""
    from torch.utils.data import Subset
    while True:
        g = getattr(ds, "__getitems__", None)
        if not g:
            return True
        if type(ds) is not Subset:
            return False
        ds = ds.dataset  # torch 2.x's Subset.__getitems__ is ds[indices[i]] per index


def fetch_batch(fetcher, indices, learner):
    """torch's `[dataset[idx] for idx in indices]`, noting the files of unlearned indices."""
    global _current
    ds, seen, maps = fetcher.dataset, learner.seen, learner.maps
    data, records = [], []
    for idx in indices:
        inner = idx
        if maps:
            for m in maps:
                inner = m[inner]
        if inner in seen:
            data.append(ds[idx])
            continue
        cur = [_get_ident(), inner, []]
        _current = cur
        try:
            data.append(ds[idx])
        finally:
            _current = None
        seen.add(inner)
        records.append(cur)
    if records:
        guard.call(_send, learner.key, records)
    return data


def fetch_one(fetcher, idx, learner, orig):
    """torch's non-batched fetch of one index, noting its files."""
    global _current
    inner = idx
    for m in learner.maps:
        inner = m[inner]
    if inner in learner.seen:
        return orig(fetcher, idx)
    cur = [_get_ident(), inner, []]
    _current = cur
    try:
        out = orig(fetcher, idx)
    finally:
        _current = None
    learner.seen.add(inner)
    guard.call(_send, learner.key, [cur])
    return out


def watch():
    """Collects this thread's opens under a mount until unwatch(), for a caller that reads
    one table index (a Keras Sequence's batch) at a time, in any number of threads at once:
    the record [thread, None, files], files (root, relative path) as opened."""
    _install_hook()
    cur = [_get_ident(), None, []]
    _watching[cur[0]] = cur
    return cur


def unwatch():
    _watching.pop(_get_ident(), None)


def send(key, records):
    """TABLE_FILES of table `key`: records [thread, index, [(root, rel), ...]]."""
    _send(key, records)


def _send(key, records):
    by_root = {}
    for _, index, files in records:
        index = tables.index_of(index)
        if index is None:
            continue  # a key of a dataset indexed otherwise: no table entry to file it under
        per = {}
        for root, rel in files:
            per.setdefault(root, {})[rel] = None  # dedupe, keep first-open order
        for root, rels in per.items():
            by_root.setdefault(root, []).append(
                (index, [wire.path_bytes(r) for r in rels]))
    for root, recs in by_root.items():
        channel.send(root, wire.table_files(key, recs))
