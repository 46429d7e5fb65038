"""The patches of Keras's image_dataset_from_directory (IDFD) and of tf.data's Dataset.__iter__.

The daemon models IDFD's file order exactly from its settings (--sampler keras, docs/
tensorflow.md "Pattern B"), so nothing here computes an order: the reporter sends the settings
once (SETTINGS) and one EPOCH frame per iteration of the dataset.

patch(module), after the module that defines IDFD ran (tf.keras 2: keras.src.utils.image_dataset,
keras <= 2.12 keras.utils.image_dataset, tf_keras.src.utils.image_dataset; Keras 3:
keras.src.utils.image_dataset_utils): the module attribute becomes a wrapper, so the public
re-exports (keras.utils..., tf.keras.utils..., keras.preprocessing...) bind it. The wrapper calls
the original with exactly the caller's arguments and returns its result. Before the call it
reads the arguments (only for a directory under a clairfs mount, tf.data format) and, when
seed is None, predicts the seed Keras draws first thing (`np.random.randint(1e6)` on NumPy's
global generator; no other global draw comes before it in either line) from a copy of the
global state; after the call it checks that the global state moved by exactly that one draw
(else another thread drew too: nothing is reported). The dataset(s) returned are tagged
(_tags) with their settings; subset="both" returns two, each tagged with its own subset.

At the first tag, tf.data's DatasetV2.__iter__ (tensorflow.python.data.ops.dataset_ops) is
wrapped: an iter() whose dataset's inputs (DatasetV2._inputs(), down to the tagged dataset)
reach a tagged dataset counts one iteration of it; the iterator made is remembered (weakly,
_pending) with its stream and k, k = iterations of that tagged dataset started before. Each
iterator creation counts because the dataset's reshuffling tf.data shuffle draws its seeds from
a per-dataset generator at every iterator creation. A stream is a (tagged dataset, shard) pair:
the `.shard(n, i)` met on the way gives rank i and world_size n (0 and 1 without one).
SETTINGS (first time for the stream) and EPOCH(stream, k) are sent when the iterator starts
being read, never at its creation: fit makes iterators it never reads (tf.keras 2's
DataHandler.enumerate_epochs one before its epoch loop, Keras 3's EpochIterator one at each
epoch's end that the next epoch drops when steps_per_epoch is None), and the daemon takes each
EPOCH for the next epoch the process reads. Started being read = the first of:
  - tf.keras 2 (keras.src.engine.data_adapter, keras.engine..., tf_keras.src.engine...):
    DataHandler.enumerate_epochs hands out `(epoch, iterator)` (patch_reader);
  - Keras 3 (keras.src.trainers.epoch_iterator): EpochIterator._enumerate_iterator hands out
    `(begin, end, iterator)` (patch_reader);
  - anything else: the iterator's first eager OwnedIterator.__next__ / get_next /
    get_next_as_optional (wrapped at the first tag; while nothing is pending a call costs one
    dict truth test, else one dict lookup).
Not reported, and the tagged dataset given up for good (its count is no longer known): an
iteration made inside a tf.function or in graph mode, a remembered iterator first read in graph
mode (a tf.function closing over it), a path through repeat/cache/snapshot (zero or many input
iterations per iteration), the tagged dataset met more than once (zip/concatenate with itself),
an iter() that raised. Not reported for that iteration alone (counted): more than one shard, a
shard whose values are not Python-known, an iterator never read, an iterator read only inside a
tf.function it was passed to (it is rebuilt there, not the object iter() returned), one read
only through a distribute strategy's iterator.
Every hook body runs under guard.call: a failure turns the reporter off, never the job.
"""
import functools
import inspect
import os
import sys
import threading
import weakref

from . import channel, guard, tables, wire

_tags = weakref.WeakKeyDictionary()  # tagged dataset -> _Tag
_lock = threading.Lock()
_iter_patched = False
# id(iterator made by DatasetV2.__iter__, not read yet) -> (weakref to it, [(tag, rank, world, k)])
# A plain dict: `if _pending` is the whole cost of the read hooks while nothing is pending.
_pending = {}
_MAX_NODES = 10000       # a walk that visits more gives up every tagged dataset
_REITERATING = ("Repeat", "Cache", "Snapshot")  # class names: 0 or n input iterations each


class _Tag:
    """A dataset IDFD returned: where it lists, its settings, the iterations started.

    The base of every tagged dataset (lf_hooks' list_files tags too): route() says what an
    iteration reached through `path` is, and counts it."""
    __slots__ = ("root", "settings", "count", "lost", "streams")
    sampler = "keras"
    framework = "keras"

    def __init__(self, root, settings):
        self.root = root            # (mount root, directory relative to it)
        self.settings = settings    # [(key, value), ...] after sampler/root/rank/world_size
        self.count = 0              # iterations started
        self.lost = False           # an iteration of unknown count: nothing more is reported
        self.streams = {}           # stream key ((rank, world_size) here) -> stream id

    def route(self, path):
        """An iteration of `ds` reaching this dataset through `path` (the datasets from `ds`
        down to it, this one excluded), in eager mode, by one way only. Under _lock. Counts
        it and returns (k, stream key, fields after sampler/root) to report once read,
        (k, None, None) when that iteration is not to be reported, or None after giving the
        dataset up (self.lost)."""
        shards, reiter = (), False
        for node in path:
            name = type(node).__name__
            if "Shard" in name:
                shards = shards + ((_shard_of(node) if name == "_ShardDataset" else False),)
            if any(w in name for w in _REITERATING):
                reiter = True
        if reiter:
            self.lost = True  # 0 / several iterations of it per iteration
            return None
        k = self.count
        self.count += 1
        if len(shards) > 1 or (shards and shards[0] is False):
            return k, None, None  # the shard is not known: this iteration is not reported
        rank, world = shards[0] if shards else (0, 1)
        return k, (rank, world), [("rank", rank), ("world_size", world)]


def patch(module):
    if getattr(module, "_clairfs_patched", False):
        return
    orig = module.image_dataset_from_directory
    sig = inspect.signature(orig)
    package = module.__name__.split(".")[0]

    @functools.wraps(orig)
    def image_dataset_from_directory(*args, **kwargs):
        if guard.off:
            return orig(*args, **kwargs)
        plan = guard.call(_before, sig, args, kwargs)
        out = orig(*args, **kwargs)
        if plan is not None:
            guard.call(_after, plan, out, package)
        return out

    module.image_dataset_from_directory = image_dataset_from_directory
    module._clairfs_patched = True


def _before(sig, args, kwargs):
    """What the call will do, read from its arguments; None when it is not to be reported."""
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError:
        return None  # the original raises the same
    bound.apply_defaults()
    a = bound.arguments
    if a.get("format", "tf") != "tf":
        return None  # Keras 3's grain datasets are no tf.data
    directory = a.get("directory")
    if not isinstance(directory, (str, bytes, os.PathLike)):
        return None
    where = channel.locate_dir(directory)
    if where is None:
        return None
    np = sys.modules.get("numpy")
    if np is None:
        return None
    plan = {"where": where, "args": a, "seed": a.get("seed"), "expect": None}
    if plan["seed"] is None:
        # Keras's first NumPy draw, in both lines: `seed = np.random.randint(1e6)` before
        # index_directory (which then shuffles with RandomState(seed), not the global state).
        rs = np.random.RandomState()
        rs.set_state(np.random.get_state())
        plan["seed"] = int(rs.randint(1e6))
        plan["expect"] = rs.get_state()
    return plan


def _same_state(np, a, b):
    return (a[0] == b[0] and np.array_equal(a[1], b[1]) and tuple(a[2:]) == tuple(b[2:]))


def _version(package):
    mod = sys.modules.get(package)
    text = getattr(mod, "__version__", None)
    if not isinstance(text, str):
        mod = sys.modules.get(package + ".src.version")
        text = getattr(mod, "__version__", None)
    if not isinstance(text, str):
        return None
    parts = []
    for p in text.split(".")[:3]:
        digits = ""
        for ch in p:
            if not ch.isdigit():
                break
            digits += ch
        if not digits:
            break
        parts.append(int(digits))
        if digits != p:
            break
    if len(parts) < 2:
        return None
    while len(parts) < 3:
        parts.append(0)
    return tuple(parts)


def _global_seed():
    """(eager, TF's global seed or None) as random_seed.get_seed reads it."""
    ctx = sys.modules.get("tensorflow.python.eager.context")
    ops = sys.modules.get("tensorflow.python.framework.ops")
    if ctx is None or ops is None:
        return False, None
    if ctx.executing_eagerly():
        return True, ctx.global_seed()
    return False, ops.get_default_graph().seed


def _plain(v):
    return isinstance(v, str) and "\n" not in v and "," not in v and v != ""


def _after(plan, out, package):
    np = sys.modules.get("numpy")
    if plan["expect"] is not None:
        if np is None or not _same_state(np, np.random.get_state(), plan["expect"]):
            return  # not exactly Keras's one draw: the seed is not known
    a = plan["args"]
    if "\n" in plan["where"][1]:
        return  # a line of SETTINGS text
    version = _version(package)
    eager, global_seed = _global_seed()
    if version is None or not eager:
        return  # graph mode: its iterators are not made by __iter__
    seed = plan["seed"]
    shuffle = bool(a.get("shuffle"))
    fields = []
    if shuffle:
        try:
            seed = int(seed)
        except (TypeError, ValueError):
            return
        if not 0 <= seed < 1 << 32:
            return  # RandomState refuses it: Keras raises or the daemon would
        fields.append(("seed", seed))
    else:
        fields.append(("no-shuffle", 1))
    if global_seed is not None:
        fields.append(("global-seed", int(global_seed)))
    fields.append(("keras-version", "%d.%d.%d" % version))
    batch = a.get("batch_size")
    fields.append(("batch-size", "none" if batch is None else int(batch)))
    split = a.get("validation_split")
    if split:
        fields.append(("validation-split", repr(float(split))))
    labels, label_mode = a.get("labels"), a.get("label_mode")
    inferred = isinstance(labels, str) and labels == "inferred" and label_mode is not None
    class_names = a.get("class_names")
    subset = a.get("subset")
    if subset == "both":
        if not isinstance(out, (list, tuple)) or len(out) != 2:
            return
        parts = [(out[0], "training"), (out[1], "validation")]
        if shuffle and version >= (3, 3, 0):
            # Keras >= 3.3 builds the validation dataset of "both" without its path shuffle
            # (shuffle=False there, the listing shuffled all the same): no setting says so.
            parts = parts[:1]
    else:
        parts = [(out, subset if split else None)]
    tail = [("labels", "inferred" if inferred else "none")]
    if inferred and class_names is not None and len(class_names):
        names = list(class_names)
        if not all(_plain(n) for n in names):
            return
        tail.append(("class-names", ",".join(names)))
    if a.get("follow_links"):
        tail.append(("follow-links", 1))
    for ds, sub in parts:
        mine = list(fields)
        if sub is not None:
            mine.append(("subset", sub))
        try:
            tag_dataset(ds, _Tag(plan["where"], mine + tail))
        except TypeError:
            continue  # not weakly referenceable: not a tf.data dataset


def tag_dataset(ds, tag):
    """Tags a tf.data dataset (TypeError if it is not weakly referenceable); its iterations
    are watched from now on."""
    _tags[ds] = tag
    _patch_iter()


def _patch_iter():
    global _iter_patched
    if _iter_patched:
        return
    m = sys.modules.get("tensorflow.python.data.ops.dataset_ops")
    D = getattr(m, "DatasetV2", None)
    if D is None:
        return
    orig = D.__iter__

    @functools.wraps(orig)
    def __iter__(self):
        if not _tags or guard.off:
            return orig(self)
        found = guard.call(_on_iter, self)
        try:
            it = orig(self)
        except BaseException:
            if found:
                guard.call(_lose, found[0])
            raise
        if found and found[1]:
            guard.call(_remember, it, found[1])
        return it

    D.__iter__ = __iter__
    _iter_patched = True
    _patch_next()


def _patch_next():
    """The fallback for readers other than fit: an iterator's first eager read."""
    m = sys.modules.get("tensorflow.python.data.ops.iterator_ops")
    O = getattr(m, "OwnedIterator", None)
    if O is None:
        return
    for name in ("__next__", "get_next", "get_next_as_optional"):
        orig = O.__dict__.get(name)
        if orig is not None:
            setattr(O, name, _first_read(orig))


def _first_read(orig):
    @functools.wraps(orig)
    def method(self, *args, **kwargs):
        if _pending and id(self) in _pending:
            guard.call(_read_first, self)
        return orig(self, *args, **kwargs)
    return method


def _read_first(it):
    ctx = sys.modules.get("tensorflow.python.eager.context")
    if ctx is not None and ctx.executing_eagerly():
        _read(it)
        return
    with _lock:
        for entry in _take(it) or ():
            entry[0].lost = True  # read in a graph: how many times is not known


def patch_reader(module):
    """Fit's readers: tf.keras 2's DataHandler.enumerate_epochs, Keras 3's
    EpochIterator._enumerate_iterator. Each item they hand out holds the iterator about to be
    read (item[1], item[2]); it is reported then (if it is pending)."""
    if getattr(module, "_clairfs_idfd_reader", False):
        return
    H = getattr(module, "DataHandler", None)
    E = getattr(module, "EpochIterator", None)
    if H is not None and "enumerate_epochs" in H.__dict__:
        H.enumerate_epochs = _reader(H.enumerate_epochs, 1)
    if E is not None and "_enumerate_iterator" in E.__dict__:
        E._enumerate_iterator = _reader(E._enumerate_iterator, 2)
    module._clairfs_idfd_reader = True


def _reader(orig, pick):
    @functools.wraps(orig)
    def method(self, *args, **kwargs):
        gen = orig(self, *args, **kwargs)
        if not _tags or guard.off:
            return gen
        return _reading(gen, pick)
    return method


def _reading(gen, pick):
    """gen's items, values sent and exceptions thrown, unchanged; each item's iterator
    (item[pick]) reported before the item is handed out."""
    value, thrown = None, None
    while True:
        try:
            if thrown is not None:
                exc, thrown = thrown, None
                item = gen.throw(exc)
            else:
                item = gen.send(value)
        except StopIteration as stop:
            return stop.value
        if _pending:
            guard.call(_read_item, item, pick)
        try:
            value = yield item
        except GeneratorExit:
            gen.close()
            raise
        except BaseException as e:
            value, thrown = None, e


def _read_item(item, pick):
    if isinstance(item, tuple) and len(item) > pick:
        it = item[pick]
        if id(it) in _pending:
            _read(it)


def _remember(it, entries):
    key = id(it)

    def gone(ref, key=key):
        e = _pending.get(key)
        if e is not None and e[0] is ref:
            _pending.pop(key, None)

    try:
        ref = weakref.ref(it, gone)
    except TypeError:
        return  # no tf.data iterator
    _pending[key] = (ref, entries)


def _take(it):
    """The pending entries of `it` (now no longer pending), or None. Under _lock."""
    e = _pending.get(id(it))
    if e is None or e[0]() is not it:
        return None
    del _pending[id(it)]
    return e[1]


def _read(it):
    """`it` starts being read: its iterations are reported (unless given up since)."""
    with _lock:
        for tag, key, fields, k in _take(it) or ():
            if not tag.lost:
                _report(tag, key, fields, k)


def _children(node):
    """The input datasets of a tf.data dataset (each as often as it is an input)."""
    if type(node).__name__ == "DatasetV1Adapter":
        inner = getattr(node, "_dataset", None)
        return [inner] if inner is not None else []
    try:
        kids = node._inputs()
    except Exception:
        kids = None
    if isinstance(kids, (list, tuple)):
        return [k for k in kids if k is not None]
    kids = []
    one = getattr(node, "_input_dataset", None)
    if one is not None:
        kids.append(one)
    many = getattr(node, "_input_datasets", None)
    if isinstance(many, (list, tuple)):
        kids += [k for k in many if k is not None and k is not one]
    return kids


def _shard_of(node):
    """(index, count) of a plain .shard(), or False if its values are not known in Python."""
    try:
        n, i = node._num_shards, node._index
        n = int(n.numpy()) if hasattr(n, "numpy") else int(n)
        i = int(i.numpy()) if hasattr(i, "numpy") else int(i)
    except Exception:
        return False
    if n < 1 or not 0 <= i < n:
        return False
    return i, n


def _walk(ds):
    """[(tag, tagged dataset, path)] for each path from `ds` down to a tagged dataset, path =
    the datasets on the way (`ds` first, the tagged one excluded); None when the walk gave up
    (too many nodes)."""
    found, stack, visits = [], [(ds, ())], 0
    while stack:
        node, path = stack.pop()
        visits += 1
        if visits > _MAX_NODES:
            return None
        try:
            tag = _tags.get(node)
        except TypeError:
            tag = None
        if tag is not None:
            found.append((tag, node, path))
            continue  # nothing tagged lies under a tagged dataset's own datasets
        path = path + (node,)
        for kid in _children(node):
            stack.append((kid, path))
    return found


def _on_iter(ds):
    """Counts the iteration for each tagged dataset under `ds`. Returns (the tags counted (given
    up if the real __iter__ raises), [(tag, rank, world, k)] to report once the iterator made is
    read), or None."""
    ctx = sys.modules.get("tensorflow.python.eager.context")
    eager = ctx is not None and ctx.executing_eagerly()
    found = _walk(ds)
    with _lock:
        if found is None:
            for tag in list(_tags.values()):
                tag.lost = True
            return None
        if not found:
            return None
        paths = {}
        for tag, node, path in found:
            paths.setdefault(id(tag), (tag, []))[1].append(path)
        counted, entries = [], []
        for tag, ways in paths.values():
            if tag.lost:
                continue
            if not eager or len(ways) > 1:
                tag.lost = True  # iterators made in a graph, or several ways down to it
                continue
            routed = tag.route(ways[0])
            if routed is None:
                continue  # given up
            counted.append(tag)
            k, key, fields = routed
            if key is not None:
                entries.append((tag, key, fields, k))
        return counted, entries


def _lose(tags):
    with _lock:
        for tag in tags:
            tag.lost = True


def _report(tag, key, fields, k):
    root, rel = tag.root
    frames = []
    stream = tag.streams.get(key)
    if stream is None:
        stream = tag.streams[key] = tables.new_stream()
        fields = [("sampler", tag.sampler), ("root", rel)] + fields + tag.settings
        frames.append(wire.settings(stream, fields))
    frames.append(wire.epoch(stream, k))
    channel.hello_context.setdefault("framework", tag.framework)
    channel.send(root, frames)
