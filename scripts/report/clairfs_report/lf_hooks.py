"""tf.data.Dataset.list_files pipelines, reported by their settings (--sampler tf-list-files).

The daemon models the file order of `list_files(PATTERN, seed=S)` followed by a shard, one
shuffle, a repeat and element-wise stages exactly (docs/tensorflow.md, prefetch/tf/
tf_data_sampler.hpp), so, as for image_dataset_from_directory (idfd_hooks), the reporter sends
the settings once (SETTINGS) and one EPOCH frame per iteration read, through idfd_hooks'
machinery: the tag, the DatasetV2.__iter__ counting, the read hooks, the streams.

patch(module), after tensorflow.python.data.ops.dataset_ops ran: DatasetV2.list_files (a
staticmethod; DatasetV1.list_files calls it) becomes a wrapper that calls the original with
the caller's arguments (a seed added only where TF would seed at random, below) and returns its
result. Only a call whose pattern is one path
(str, bytes, PathLike) whose fixed directory (the components before the first with a glob
character) is under a clairfs mount, in eager mode, is tagged:
  - shuffle=False: `no-shuffle`;
  - shuffling: the seeds are read off the _ShuffleDataset list_files made (its `_seed`,
    `_seed2`, what random_seed.get_seed gave: (G mod 2^31-1, S mod 2^31-1) with a global seed,
    (87654321, S) without, the op seed S drawn from the context's counter when seed=None): sent
    as `seed` = seed2 and, when a global seed is set (or seed1 is not the default graph seed),
    `global-seed` = seed1, which the model's get_seed turns into the same pair. With no seed
    and no global seed TensorFlow would seed at random, unknowably: the wrapper passes a seed
    drawn from os.urandom instead (_seed_for_tf), as does DatasetV2.shuffle over a tagged
    list_files (_seeding_shuffle). The orders have the same distribution; no generator of the
    job moves.
At each iteration (idfd_hooks._on_iter) the path from the iterated dataset down to the tagged
one is mapped to settings (route): bottom-up, a block of order stages right above list_files
(`.shard(n, i)`, one `.shuffle(K, seed)` when list_files did not shuffle, `.repeat(N)`) in an
order the model has, then element-wise stages only (map, batch, prefetch, interleave, ...),
among which one `.repeat(N)` (not fused with the shuffle: `no-repeat-fusion`). Anything else
(take, skip, filter, zip, a second shard or shuffle, repeat() forever, an unknown stage) leaves
that iteration unreported (still counted); cache/snapshot give the dataset up.
"""
import functools
import inspect
import os
import sys
import weakref

from . import channel, guard, idfd_hooks

_DEFAULT_GRAPH_SEED = 87654321
_GLOB = ("*", "?", "[", "\\")
# Stages between list_files and the iterated dataset that keep every element, in order (or
# open files in order: interleave), so the files opened follow list_files' order.
_ELEMENTWISE = {
    "_MapDataset", "_ParallelMapDataset", "_PrefetchDataset", "_BatchDataset",
    "_ParallelBatchDataset", "_PaddedBatchDataset", "_UnbatchDataset", "_InterleaveDataset",
    "_ParallelInterleaveDataset", "_FlatMapDataset", "_OptionsDataset", "_IgnoreErrorsDataset",
    "_ModelDataset", "_MaxIntraOpParallelismDataset", "_PrivateThreadPoolDataset",
    "_AssertCardinalityDataset", "_PrefetchToDeviceDataset",
}
_LOSING = ("Cache", "Snapshot")
# Stages grappler never removes (its noop_elimination drops pass-through maps, prefetch(0), ...):
# one of them between a shuffle and a repeat keeps the two from being fused.
_KEPT = {"_BatchDataset", "_ParallelBatchDataset", "_PaddedBatchDataset", "_UnbatchDataset",
         "_InterleaveDataset", "_ParallelInterleaveDataset", "_FlatMapDataset"}
# Orders of the block of order stages above list_files (bottom-up: S shuffle, D shard, R
# repeat) the model makes: TfDataSampler's shard before/after the shuffle, repeat before/after.
_MODELLED = {"", "D", "R", "DR", "S", "SD", "SR", "SDR", "DS", "DSR", "RS", "DRS", "RSD"}
_shuffle_counts = weakref.WeakKeyDictionary()  # a pipeline's _ShuffleDataset -> iterations


class _LfTag(idfd_hooks._Tag):
    __slots__ = ("glob", "own")
    sampler = "tf-list-files"
    framework = "tensorflow"

    def __init__(self, root, glob, own):
        super().__init__(root, [])
        self.glob = glob
        self.own = own  # list_files' own shuffle: [(key, value)] of its seeds, or None

    def route(self, path):
        shuffles = [n for n in path if type(n).__name__ == "_ShuffleDataset"]
        if any(any(w in type(n).__name__ for w in _LOSING) for n in path):
            self.lost = True  # 0 or several reads of the files per iteration
            return None
        # Every iteration creates an iterator of each shuffle on the way: each draws its
        # seeds from its own generator then.
        k = self.count
        self.count += 1
        ks = {}
        for n in shuffles:
            ks[id(n)] = _shuffle_counts.get(n, 0)
            _shuffle_counts[n] = ks[id(n)] + 1
        plan = _plan(self, path)
        if plan is None:
            return k, None, None
        shuffle_node, fields = plan
        if shuffle_node is not None:
            k = ks[id(shuffle_node)]
        return k, tuple(fields), fields


def patch(module):
    D = getattr(module, "DatasetV2", None)
    if D is None or getattr(D, "_clairfs_lf", False):
        return
    orig = D.__dict__.get("list_files")
    fn = getattr(orig, "__func__", None)
    if not isinstance(orig, staticmethod) or fn is None:
        return
    sig = inspect.signature(fn)

    @functools.wraps(fn)
    def list_files(*args, **kwargs):
        args, kwargs = _seeded(_seed_for_tf, sig, args, kwargs)
        out = fn(*args, **kwargs)
        if not guard.off:
            guard.call(_after, sig, args, kwargs, out)
        return out

    D.list_files = staticmethod(list_files)
    shuffle = D.__dict__.get("shuffle")
    if callable(shuffle):
        D.shuffle = _seeding_shuffle(shuffle)
    D._clairfs_lf = True


def _seeding_shuffle(orig):
    """DatasetV2.shuffle, given a seed from os.urandom where TF would seed it at random and the
    pipeline below is a tagged list_files (see _seed_for_tf); else exactly the caller's call."""
    sig = inspect.signature(orig)

    @functools.wraps(orig)
    def shuffle(*args, **kwargs):
        args, kwargs = _seeded(_seed_shuffle, sig, args, kwargs)
        return orig(*args, **kwargs)

    return shuffle


def _seeded(seeder, sig, args, kwargs):
    """The call's (args, kwargs), with the seed `seeder` adds where it adds one."""
    if guard.off:
        return args, kwargs
    seeded = guard.call(seeder, sig, args, kwargs)
    return (args, kwargs) if seeded is None else seeded


def _seed_shuffle(sig, args, kwargs):
    if not idfd_hooks._tags:
        return None
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError:
        return None
    if bound.arguments.get("seed") is not None:
        return None
    eager, global_seed = idfd_hooks._global_seed()
    if not eager or global_seed is not None:
        return None
    below = idfd_hooks._walk(bound.arguments.get("self"))
    if not below or not any(isinstance(t[0], _LfTag) for t in below):
        return None
    bound.arguments["seed"] = random_seed()
    return bound.args, bound.kwargs


def split_pattern(pattern):
    """(fixed directory, glob relative to it) of an absolute pattern, or None: the directory is
    the components before the first with a glob character."""
    parts = pattern.split("/")
    for i, part in enumerate(parts):
        if any(c in part for c in _GLOB):
            break
    else:
        i = len(parts) - 1  # no glob character: one file, matched in its directory
    fixed, rest = "/".join(parts[:i]) or "/", parts[i:]
    if not rest or any(p in ("", ".", "..") for p in rest):
        return None
    return fixed, "/".join(rest)


def _int(t):
    return int(t.numpy()) if hasattr(t, "numpy") else int(t)


def _seed_fields(node):
    """The (seed, global-seed) fields of a _ShuffleDataset, [] when TF seeds it at random."""
    s1, s2 = _int(node._seed), _int(node._seed2)
    if s1 == 0 and s2 == 0:
        return None  # no seed and no global seed: random
    fields = [("seed", s2)]
    _, global_seed = idfd_hooks._global_seed()
    if s1 != _DEFAULT_GRAPH_SEED or global_seed is not None:
        fields.append(("global-seed", s1))
    return fields


def _located(a):
    """(mount's (root, directory), glob) of list_files' bound arguments `a` when its pattern is
    one path under a clairfs mount, else None."""
    pattern = a.get("file_pattern")
    if not isinstance(pattern, (str, bytes, os.PathLike)):
        return None  # a list or a tensor of patterns: not one glob
    pattern = os.fsdecode(os.fspath(pattern))
    if "\n" in pattern or "\0" in pattern:
        return None
    split = split_pattern(os.path.abspath(pattern) if not pattern.startswith("/") else pattern)
    if split is None:
        return None
    where = channel.locate_dir(split[0])
    if where is None or "\n" in where[1]:
        return None
    return where, split[1]


def _seed_for_tf(sig, args, kwargs):
    """(args, kwargs) with a seed where TensorFlow would seed list_files' shuffle at random (no
    seed, no global seed, eager, the pattern under a clairfs mount), else None.

    TF then draws each iteration's order from a random seed of its own, which nothing outside
    the kernel can know. A seed drawn here from os.urandom in its place gives orders of the
    same distribution - every run still shuffles differently - that the daemon's model can
    predict; no random generator of the job (Python's, NumPy's, TF's op-seed counter) moves.
    CLAIRFS_REPORT=0 leaves TF to seed it."""
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError:
        return None
    a = dict(bound.arguments)
    if a.get("seed") is not None or a.get("shuffle") not in (None, True):
        return None
    eager, global_seed = idfd_hooks._global_seed()
    if not eager or global_seed is not None or _located(a) is None:
        return None
    bound.arguments["seed"] = random_seed()
    return bound.args, bound.kwargs


def random_seed():
    """An op seed in [1, 2^31 - 2] from os.urandom."""
    return int.from_bytes(os.urandom(4), "little") % (2 ** 31 - 2) + 1


def _after(sig, args, kwargs, out):
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError:
        return
    bound.apply_defaults()
    located = _located(bound.arguments)
    if located is None:
        return
    where, glob = located
    eager, _ = idfd_hooks._global_seed()
    if not eager:
        return  # graph mode: the seeds are no Python numbers, iterators no __iter__
    own = None
    node = out
    if type(node).__name__ == "DatasetV1Adapter":
        node = getattr(node, "_dataset", None)
    if type(node).__name__ == "_ShuffleDataset":
        own = _seed_fields(node)
        if own is None:
            return
        if not node._reshuffle_each_iteration:
            own.append(("no-reshuffle", 1))
    elif type(node).__name__ != "_TensorSliceDataset":
        return  # not what list_files makes
    try:
        idfd_hooks.tag_dataset(out, _LfTag(where, glob, own))
    except TypeError:
        pass


def _fusion_on(node):
    try:
        o = node.options().experimental_optimization
        return o.apply_default_optimizations is not False and \
            o.shuffle_and_repeat_fusion is not False
    except Exception:
        return True


def _kept(node):
    """True when grappler surely keeps this element-wise stage (False: it may drop it)."""
    name = type(node).__name__
    if name in _KEPT:
        return True
    try:
        if name == "_PrefetchDataset":
            return _int(node._buffer_size) != 0
        if name in ("_MapDataset", "_ParallelMapDataset"):
            # A map whose outputs are its inputs (through Identity ops) may be a pass-through.
            for out in node._map_func.function.graph.outputs:
                op = out.op
                while op.type == "Identity" and op.inputs:
                    op = op.inputs[0].op
                if op.type != "Placeholder":
                    return True
    except Exception:
        pass
    return False


def _plan(tag, path):
    """(the shuffle of the pipeline the model shuffles with, or None; [(key, value)] after
    sampler/root) for an iteration through `path`, or None when the model has no such
    pipeline."""
    kinds, shard, repeat, shuffle = "S" if tag.own is not None else "", None, None, None
    block, late, kept = True, False, False
    for node in reversed(path):  # bottom-up: from list_files to the iterated dataset
        name = type(node).__name__
        if name == "DatasetV1Adapter":
            continue
        if name == "_ShardDataset" and block and shard is None:
            shard = idfd_hooks._shard_of(node)
            if shard is False:
                return None
            kinds += "D"
        elif name == "_ShuffleDataset" and block and "S" not in kinds:
            shuffle = node
            kinds += "S"
        elif name == "_RepeatDataset" and repeat is None:
            try:
                count = _int(node._count)
            except Exception:
                return None
            if count < 1:
                return None  # repeat() forever: a loop over it never ends (or no element)
            repeat = count
            if count == 1:
                continue
            if block:
                kinds += "R"
            else:
                late = True
        elif name in _ELEMENTWISE:
            block = False
            if repeat is None and not kept:
                kept = _kept(node)
        else:
            return None
    if kinds not in _MODELLED or (late and kinds + "R" not in _MODELLED):
        return None
    rank, world = shard if shard is not None else (0, 1)
    fields = [("rank", rank), ("world_size", world), ("glob", tag.glob)]
    if world > 1:
        fields.append(("shard", world))
    if tag.own is not None:
        fields += tag.own
    elif shuffle is not None:
        seeds = _seed_fields(shuffle)
        if seeds is None:
            return None
        fields += seeds
        fields.append(("buffer-size", _int(shuffle._buffer_size)))
        if not shuffle._reshuffle_each_iteration:
            fields.append(("no-reshuffle", 1))
        if "D" in kinds and kinds.index("D") < kinds.index("S"):
            fields.append(("shard-before-shuffle", 1))
    else:
        fields.append(("no-shuffle", 1))
    if repeat is not None and repeat > 1:
        fields.append(("repeat", repeat))
        if "S" in kinds and kinds.index("R" if not late else "S") < kinds.index("S"):
            fields.append(("repeat-before-shuffle", 1))
        elif "S" in kinds:
            # The model fuses shuffle and repeat (grappler's shuffle_and_repeat_fusion) when
            # no shard lies between them; TF does only when the repeat is right above it.
            model_fused = world == 1 or ("D" in kinds and kinds.index("D") < kinds.index("S"))
            fused = not late and kinds.endswith("SR") and _fusion_on(path[0])
            if model_fused and late and not kept and _fusion_on(path[0]):
                return None  # grappler may drop the stages between: fused or not, unknown
            if model_fused and not fused:
                fields.append(("no-repeat-fusion", 1))
    return shuffle, fields
