"""The patches of torch's DataLoader: epoch orders in the main process, files in fetchers.

patch(dataloader module) wraps, after the original ran:
  - _BaseDataLoaderIter.__init__ and ._reset: the iterator's new `_sampler_iter` goes into a
    Recorder when the sampler is one of torch's own whose iteration draws all its randomness
    at its start (exact types; a subclass may draw lazily). On the Recorder's first __next__,
    the moment torch would first draw, it materialises the whole epoch from the same
    iterator (same generators, same moment), reports it, then hands out the same items. It
    never takes more than the sampler's length says (at most MAX_EPOCH samples), so a
    sampler too long for that is left alone, as is any other sampler: not reported.
  - _MapDatasetFetcher.fetch: learns the files each index opens (clairfs_report.learn).
Every hook body runs under guard.call: a failure turns the reporter off, never the job.
Single-thread, as torch's iterators are.
"""
import functools
import operator
import os
import weakref
from array import array
from itertools import chain, islice

from . import channel, guard, learn, tables, wire

_streams = weakref.WeakKeyDictionary()  # DataLoader -> [stream id, epochs started]
_EAGER = ()        # sampler types drawing everything at the first draw
_RANDOM = None     # RandomSampler: eager only with its own generator (see _plan)
_BATCH = None
MAX_EPOCH = 1 << 24  # samples; a longer epoch (64 MiB of ORDER) is not materialised


def patch(module):
    B = getattr(module, "_BaseDataLoaderIter", None)
    if B is None or getattr(B, "_clairfs_patched", False):
        return
    global _EAGER, _RANDOM, _BATCH
    from torch.utils.data import sampler as S
    eager = [S.SequentialSampler, S.SubsetRandomSampler, S.WeightedRandomSampler]
    try:
        from torch.utils.data.distributed import DistributedSampler
        eager.append(DistributedSampler)
    except Exception:
        pass
    _EAGER, _RANDOM, _BATCH = tuple(eager), S.RandomSampler, S.BatchSampler

    orig_init, orig_reset = B.__init__, getattr(B, "_reset", None)

    @functools.wraps(orig_init)
    def __init__(self, loader, *args, **kwargs):
        orig_init(self, loader, *args, **kwargs)
        guard.call(_wrap, self, loader)

    B.__init__ = __init__
    if orig_reset is not None:
        @functools.wraps(orig_reset)
        def _reset(self, *args, **kwargs):
            out = orig_reset(self, *args, **kwargs)
            loader = args[0] if args else kwargs.get("loader")
            if loader is not None:
                guard.call(_wrap, self, loader)
            return out
        B._reset = _reset
    B._clairfs_patched = True
    _patch_fetch()


def _patch_fetch():
    import sys
    fetch_mod = sys.modules.get("torch.utils.data._utils.fetch")
    F = getattr(fetch_mod, "_MapDatasetFetcher", None)
    if F is None or getattr(F, "_clairfs_patched", False):
        return
    orig = F.fetch

    @functools.wraps(orig)
    def fetch(self, possibly_batched_index):
        learner = self.__dict__.get("_clairfs_learner")
        if learner is None:
            learner = guard.call(learn.setup, self) or False
            self._clairfs_learner = learner
        if learner is False or guard.off:
            return orig(self, possibly_batched_index)
        if not self.auto_collation:
            return learn.fetch_one(self, possibly_batched_index, learner, orig)
        if learner.seen.issuperset(possibly_batched_index) and not learner.maps:
            return orig(self, possibly_batched_index)
        return self.collate_fn(learn.fetch_batch(self, possibly_batched_index, learner))

    F.fetch = fetch
    F._clairfs_patched = True


def _plan(index_sampler):
    """'eager', 'predict' (RandomSampler on a caller's generator) or None (not reported)."""
    s = index_sampler
    if type(s) is _BATCH:
        s = s.sampler
    t = type(s)
    if t not in _EAGER and t is not _RANDOM:
        return None
    try:
        if len(s) > MAX_EPOCH:  # these types' lengths are exact
            return None  # e.g. RandomSampler(replacement=True, num_samples=10**12)
    except Exception:  # a dataset without a usable __len__: torch's own draw will say
        return None
    if t in _EAGER:
        return "eager"
    if s.generator is None:
        return "eager"  # its own generator, seeded from the global one at the first draw
    # On a shared generator it draws lazily (a trailing randperm at the end of the
    # epoch): predict from a copy of the generator instead, if the order is the first
    # permutation alone.
    if not s.replacement and s.num_samples <= len(s.data_source):
        return "predict"
    return None


def _wrap(it, loader):
    inner = getattr(it, "_sampler_iter", None)
    if inner is None or isinstance(inner, Recorder):
        return
    index_sampler = getattr(it, "_index_sampler", None)
    plan = _plan(index_sampler)
    if plan is None:
        return
    dataset = getattr(it, "_dataset", None)
    if dataset is None:
        return
    base, maps = tables.subset_chain(dataset)
    table = tables.table_for(base)
    if table is None:
        return
    ep = _Epoch(loader, index_sampler, plan, table, maps, getattr(it, "_num_workers", 0),
                getattr(it, "_base_seed", None), id(base))
    ep.count = len(index_sampler)  # items (batches for a BatchSampler) it will yield
    it._sampler_iter = Recorder(inner, ep)


class _Epoch:
    """What a Recorder reports about: one epoch of one loader over one table."""
    __slots__ = ("loader", "sampler", "plan", "table", "maps", "workers", "base_seed",
                 "base_id", "flat", "count")

    def __init__(self, loader, sampler, plan, table, maps, workers, base_seed, base_id):
        self.loader = weakref.ref(loader)
        self.sampler, self.plan, self.table, self.maps = sampler, plan, table, maps
        self.workers, self.base_seed, self.base_id = workers, base_seed, base_id
        self.flat, self.count = None, 0


class Recorder:
    """Stands in for a DataLoader iterator's `_sampler_iter`; hands out exactly its items."""
    __slots__ = ("_inner", "_epoch", "_items")

    def __init__(self, inner, epoch):
        self._inner, self._epoch, self._items = inner, epoch, None

    def __iter__(self):
        return self

    def __next__(self):
        items = self._items
        if items is None:
            ep = self._epoch
            if ep.plan == "eager" and not guard.off:
                # The job's own draws, at the moment torch draws; never past the length
                # _plan checked (+1: a sampler yielding more is handed on, not reported).
                limit = ep.count + 1
                whole = list(islice(self._inner, limit))
                if len(whole) < limit:
                    guard.call(_report, ep, whole)
                    items = iter(whole)
                else:
                    items = chain(whole, self._inner)
                self._items = items
            else:
                if not guard.off:
                    guard.call(_report, ep, None)
                self._items = items = self._inner
        try:
            return next(items)
        except StopIteration:
            if self._epoch is not None:
                guard.call(_drawn, self._epoch)
                self._epoch = None
            raise


def _predict(sampler):
    """The epoch a RandomSampler on a caller's generator is about to draw, from a copy."""
    import copy
    import torch
    s = sampler.sampler if type(sampler) is _BATCH else sampler
    g = torch.Generator(device=s.generator.device)
    g.set_state(s.generator.get_state())
    twin = copy.copy(s)
    twin.generator = g
    order = list(twin)
    if type(sampler) is _BATCH and sampler.drop_last:
        order = order[:len(order) // sampler.batch_size * sampler.batch_size]
    return order


def _report(ep, whole):
    loader = ep.loader()
    if loader is None:
        return
    rec = _streams.get(loader)
    if whole is None:
        indices = _indices(_predict(ep.sampler), False, ep.maps) if ep.plan == "predict" \
            else None
    else:
        indices = _indices(whole, type(ep.sampler) is _BATCH, ep.maps)
    if indices is None:  # an epoch not reported still counts
        if rec is not None:
            rec[1] += 1
        return
    if rec is None:
        rec = _streams[loader] = [tables.new_stream(), 0]
    epoch = rec[1]
    rec[1] += 1
    s = ep.sampler.sampler if type(ep.sampler) is _BATCH else ep.sampler
    if hasattr(s, "num_replicas") and hasattr(s, "rank"):
        channel.hello_context.update(rank=s.rank, world_size=s.num_replicas)
    table = ep.table
    frames = wire.order(table.key, rec[0], epoch, indices)
    shape = _shape(loader)
    if shape is not None:
        frames.insert(0, wire.loader(rec[0], *shape))
    if table.kind == tables.PATHS:
        tables.send_paths(table)
    elif ep.workers and ep.base_seed is not None:
        frames.insert(0, wire.alias(learn.key_of(ep.base_seed, os.getpid()), table.key))
        ep.flat = indices
    for root in table.roots:
        channel.send(root, frames)


def _indices(items, batched, maps):
    """The epoch (its sampler's items: batches if batched) as table indices, an array('I');
    None where one is not a table index: the key of a dataset indexed otherwise (a name, a
    float), negative, 2^32 or more."""
    def flat():
        f = tables.flatten(items) if batched else items
        return tables.map_indices(f, maps) if maps else f
    try:
        try:
            return array("I", flat())
        except TypeError:  # Python < 3.10 does not take __index__: 0-d tensors, numpy ints
            return array("I", map(operator.index, flat()))
    except (TypeError, OverflowError, IndexError):
        return None


def _shape(loader):
    """(batch size, workers, prefetch factor) of a DataLoader, or None if not plain ints."""
    batch = getattr(loader, "batch_size", None)
    if batch is None:
        sampler = getattr(loader, "batch_sampler", None)
        # a batch_sampler of the caller's, or batch_size=None: one sample at a time
        batch = 1 if sampler is None else getattr(sampler, "batch_size", None)
    workers = getattr(loader, "num_workers", 0)
    factor = getattr(loader, "prefetch_factor", None)
    if factor is None:  # torch 2.x with no workers
        factor = 2
    if not all(isinstance(v, int) and v >= 0 for v in (batch, workers, factor)):
        return None
    return max(1, batch), workers, max(1, factor)


def _drawn(ep):
    """The epoch was drawn to its end: its indices are learned (inherited by forked workers)."""
    if ep.flat is not None:
        tables.learned.setdefault(ep.base_id, set()).update(ep.flat)
        ep.flat = None
