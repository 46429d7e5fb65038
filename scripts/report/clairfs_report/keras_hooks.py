"""The patches of Keras's Sequence / PyDataset adapters: each epoch's files, as fit draws them.

fit() over a keras.utils.Sequence (tf.keras 2) or PyDataset (Keras 3), such as
ImageDataGenerator.flow_from_directory's DirectoryIterator, reads batch after batch from a
Python generator that tf.data's from_generator runs in one of its threads. The generator's
first step draws the pass's batch order, `random.shuffle(order)` over range(len(seq)) (fit's
default shuffle=True; unseeded unless the job seeds Python's `random`), then reads
seq[order[0]], seq[order[1]], ... A DirectoryIterator maps batch b to the samples
index_array[b*bs:(b+1)*bs]; its index_array is drawn by the iterator itself (at its first
__getitem__, then again in each on_epoch_end).

patch(module), after the module ran:
  - tf.keras 2 (keras.src.engine.data_adapter): KerasSequenceAdapter._handle_multiprocessing's
    generator function is wrapped; its on_epoch_end counts epochs; DataHandler.__init__ hands
    the adapter its steps_per_epoch. With workers > 1 or use_multiprocessing the generator is
    an OrderedEnqueuer's, whose own thread draws the order: data_utils.OrderedEnqueuer._run is
    wrapped to watch its first draw (_patch_enqueuer).
  - Keras 3 (keras.src.trainers.data_adapters.py_dataset_adapter): the same for
    PyDatasetAdapter._finite_generator (no enqueuer), epochs counted by on_epoch_begin;
    keras.src.trainers.epoch_iterator: EpochIterator.__init__ hands its adapter
    steps_per_epoch.
  - In both adapter modules the global `random` becomes a _Random: the real module, whose
    shuffle() calls the real random.shuffle (same call, same moment, same RNG) and then, if
    the calling thread is in the first step of a watched generator, reports the order drawn,
    before the generator reads its first batch.
The report: TABLE_PATHS of the iterator's `filepaths` (once), LOADER (batch size, 0 workers,
1: one thread reads the batches in order), ORDER of the epoch's sample indices: over the first
min(steps_per_epoch, len) batches of the drawn order, index_array[b*bs:(b+1)*bs] each, from the
index_array as it is when the order is drawn. That for a Sequence whose __getitem__ is Keras's
own Iterator.__getitem__ and which has `filepaths` and `index_array`. Any other Sequence read
without workers is a table of batches whose files are learned (learn.watch around each batch
read, keras_custom): its epochs after the first are reported as batch indices.
Keras 3 with steps_per_epoch < len: one pass serves several epochs, and on_epoch_end redraws
index_array while the generator reads ahead. The pass counts the batches its generator has
begun; at each adapter on_epoch_end the new index_array is noted with that count (batches begun
before it read the old array, the rest read the new one), and at the next on_epoch_begin the
epoch's batches of the pass are reported, each sliced from the array it reads.
tf.keras 2: an adapter's on_epoch_end draws the next epoch's index_array; that epoch is then
foreseen (in batch order when the adapter does not shuffle, else in the order a copy of
`random`'s state draws) and sent as a GUESS (_note_next).
Every hook body runs under guard.call: a failure turns the reporter off, never the job. The
generator runs in a tf.data thread: reports are sent under one lock.
"""
import functools
import random
import threading
from array import array

from . import channel, guard, keras_custom, learn, tables, wire

# .watch: the _Pass whose first step this thread is running; in an enqueuer's thread,
# .enqueued: the _Pass it reads, .sends: its _send_sequence calls so far
_tls = threading.local()
_lock = threading.Lock()   # reports come from tf.data's threads
_EPOCHS = "_clairfs_epochs"   # adapter attribute: epochs counted so far (see patch)
_STEPS = "_clairfs_steps"     # adapter attribute: steps_per_epoch given to fit, or None
_STREAM = "_clairfs_stream"   # adapter attribute: [stream id, last epoch reported]
_PASS = "_clairfs_pass"       # adapter attribute (Keras 3): the _Pass whose epochs continue
_EXEC = "_clairfs_exec"       # adapter attribute (Keras 3): fit's steps_per_execution
_FIRST = "_clairfs_first"     # adapter attribute (tf.keras 2): the _Pass of its last epoch
# tf.keras 2: stream -> (table, epoch, files), an unshuffled adapter's next epoch as its
# on_epoch_end left it (_note_next), sent as a GUESS after each ORDER of another stream until
# its own ORDER
_next_epochs = {}
_streams_sent = []  # the streams whose ORDER was sent, the latest last


class _Random:
    """Stands in for the `random` module inside a Keras adapter module."""

    def __init__(self, real):
        self._real = real

    def __getattr__(self, name):
        return getattr(self._real, name)

    def shuffle(self, x, *args, **kwargs):
        out = self._real.shuffle(x, *args, **kwargs)
        w = getattr(_tls, "watch", None)
        if w is not None:
            _tls.watch = None  # the pass's one draw; any later shuffle is not ours
            guard.call(_report, w, x)
        return out


def patch(module):
    name = module.__name__
    if getattr(module, "_clairfs_patched", False):
        return
    if name.endswith("engine.data_adapter"):
        _patch_keras2(module)
    elif name.endswith("py_dataset_adapter"):
        _patch_keras3(module)
    elif name.endswith("epoch_iterator"):
        _patch_epoch_iterator(module)
    module._clairfs_patched = True


def _swap_random(module):
    real = getattr(module, "random", None)
    if real is not None and not isinstance(real, _Random):
        module.random = _Random(real)


def _patch_keras2(module):
    A, H = module.KerasSequenceAdapter, module.DataHandler
    orig_handle, orig_end, orig_init = A._handle_multiprocessing, A.on_epoch_end, H.__init__

    @functools.wraps(orig_handle)
    def _handle_multiprocessing(self, x, workers, use_multiprocessing, max_queue_size):
        fn = orig_handle(self, x, workers, use_multiprocessing, max_queue_size)
        if guard.off:
            return fn
        shuffled = bool(getattr(self, "_shuffle_sequence", False))
        if workers > 1 or (workers > 0 and use_multiprocessing):
            # an OrderedEnqueuer per epoch: its thread draws the order (_patch_enqueuer)
            if not enqueuer_hooked:
                return fn

            @functools.wraps(fn)
            def enqueued_fn():
                guard.call(_expect_enqueuer, self, x, shuffled, workers, max_queue_size)
                return fn()
            return enqueued_fn

        @functools.wraps(fn)
        def generator_fn():
            return _watch(fn(), self, x, shuffled)
        return generator_fn

    @functools.wraps(orig_end)
    def on_epoch_end(self, *args, **kwargs):
        self.__dict__[_EPOCHS] = self.__dict__.get(_EPOCHS, 0) + 1
        out = orig_end(self, *args, **kwargs)
        if not guard.off:
            guard.call(_note_next, self)
        return out

    @functools.wraps(orig_init)
    def __init__(self, *args, **kwargs):
        orig_init(self, *args, **kwargs)
        guard.call(_steps_of_handler, self)

    enqueuer_hooked = guard.call(_patch_enqueuer, getattr(module, "data_utils", None)) is True
    A._handle_multiprocessing = _handle_multiprocessing
    A.on_epoch_end = on_epoch_end
    H.__init__ = __init__
    _swap_random(module)


def _patch_enqueuer(data_utils):
    """tf.keras 2's OrderedEnqueuer (fit with workers > 1 or use_multiprocessing): its thread's
    _run draws each pass's order with data_utils' `random`, then hands batch after batch to a
    pool of `workers` threads or processes, up to max_queue_size ahead. The first draw of an
    enqueuer made for a watched adapter reports, like a generator's first step."""
    E = getattr(data_utils, "OrderedEnqueuer", None)
    if E is None or not callable(getattr(E, "_run", None)):
        return False
    orig_run = E._run

    orig_send = E._send_sequence

    @functools.wraps(orig_run)
    def _run(self):
        w = guard.call(_take_expected, self)
        try:
            if w is not None:
                _tls.enqueued, _tls.sends = w, 0
                guard.call(_start_draw, w, self)
            return orig_run(self)
        finally:
            _tls.watch = _tls.enqueued = None

    @functools.wraps(orig_send)
    def _send_sequence(self, *args, **kwargs):
        # _run calls it as it starts (before the first pass's batches, whose order is reported
        # already or at the draw that follows) and after each pass's on_epoch_end, which drew
        # the next pass's index_array: only those later calls begin a pass.
        out = orig_send(self, *args, **kwargs)
        w = getattr(_tls, "enqueued", None)
        if w is not None:
            _tls.sends += 1
            if _tls.sends > 1:
                guard.call(_next_pass, w)
        return out

    E._run = _run
    E._send_sequence = _send_sequence
    _swap_random(data_utils)
    keras_custom.wrap_get_index(data_utils)
    return True


def _next_pass(w):
    """The enqueuer's thread starts another pass: one the epoch still reads from (an epoch of
    more steps than the Sequence has batches, as validation_steps often is) is reported as
    more of that epoch. So is the start of a pass begun when the epoch's steps end with a pass
    (steps_per_epoch = len): the pool reads up to `past` batches of it before fit stops it.
    Nothing after that."""
    if w.left is None:
        return  # the epoch's first pass was not reported
    if w.left <= 0 and w.spill <= 0:
        _tls.enqueued = None
        return
    nxt = _Pass(w.adapter, w.seq)
    nxt.shape, nxt.past, nxt.shuffled, nxt.left, nxt.more = w.shape, w.past, w.shuffled, w.left, True
    if w.left <= 0:
        nxt.past = w.spill  # only what the pool may read past the epoch's last step
    nxt.custom = w.custom
    _tls.enqueued = nxt
    if nxt.shuffled:
        _tls.watch = nxt
    else:
        _report(nxt, None)


_expected = {}  # id(Sequence) -> the _Pass its next OrderedEnqueuer reports


def _start_draw(w, enqueuer):
    """In an enqueuer's thread, before its first pass is drawn: the draw reports it (or,
    unshuffled, it is reported now)."""
    w.shuffled = bool(getattr(enqueuer, "shuffle", False))
    if w.shuffled:
        _tls.watch = w
    else:
        _report(w, None)


def _expect_enqueuer(adapter, seq, shuffled, workers, max_queue_size):
    custom = None
    if not _eligible(seq):
        custom = keras_custom.of(seq)
        if custom is None:
            return
    w = _Pass(adapter, seq)
    w.custom = custom
    # the pool's workers each read a batch, the queue holds max_queue_size in all
    w.shape = (int(workers), max(1, -(-int(max_queue_size) // max(1, int(workers)))))
    # When fit stops the enqueuer at the epoch's end the queue is full and the pool reads
    # every batch queued: up to max_queue_size + workers batches past the epoch's steps,
    # read with the epoch's index_array but never trained on. They are reported with the
    # epoch (files the job opens), so the daemon neither misses them nor takes them for
    # the next epoch's.
    w.past = int(max_queue_size) + int(workers)
    with _lock:
        _expected[id(seq)] = w


def _take_expected(enqueuer):
    seq = getattr(enqueuer, "sequence", None) or getattr(enqueuer, "py_dataset", None)
    with _lock:
        w = _expected.pop(id(seq), None)
        if w is None or w.seq is not seq:
            return None
    if w.custom is not None:
        keras_custom.enqueued(enqueuer.uid, w.custom)  # its pool's get_index learns
    return w


def _steps_of_handler(handler):
    adapter = getattr(handler, "_adapter", None)
    if adapter is not None:
        adapter.__dict__[_STEPS] = getattr(handler, "_steps_per_epoch", None)


def _patch_keras3(module):
    A = module.PyDatasetAdapter
    orig_gen, orig_begin, orig_end = A._finite_generator, A.on_epoch_begin, A.on_epoch_end

    @functools.wraps(orig_gen)
    def _finite_generator(self):
        gen = orig_gen(self)
        if guard.off:
            return gen
        self.__dict__[_PASS] = None  # a pass that may serve several epochs (_report_locked)
        return _watch(gen, self, self.py_dataset, bool(self.shuffle))

    @functools.wraps(orig_begin)
    def on_epoch_begin(self, *args, **kwargs):
        if getattr(self, "enqueuer", None) is not None and not guard.off:
            guard.call(_expect_enqueuer3, self)  # before it starts the enqueuer's thread
        out = orig_begin(self, *args, **kwargs)
        # fit's first on_epoch_begin is epoch 0; counted after: it raises when misused
        epoch = self.__dict__[_EPOCHS] = self.__dict__.get(_EPOCHS, -1) + 1
        w = self.__dict__.get(_PASS)
        if w is not None:
            guard.call(_report_next, w, epoch)
        return out

    @functools.wraps(orig_end)
    def on_epoch_end(self, *args, **kwargs):
        out = orig_end(self, *args, **kwargs)
        w = self.__dict__.get(_PASS)
        if w is not None:
            guard.call(_redrawn, w)
        return out

    A._finite_generator = _finite_generator
    A.on_epoch_begin = on_epoch_begin
    A.on_epoch_end = on_epoch_end
    _swap_random(module)
    guard.call(_patch_enqueuer3, module)


def _patch_enqueuer3(module):
    """Keras 3's OrderedEnqueuer (a PyDataset with workers > 1 or use_multiprocessing): made
    once per adapter, its _run thread started by each on_epoch_begin draws the epoch's batch
    order with the module's `random` and hands batch after batch to a pool. Watched for a
    PyDataset of the user's own only (Keras's iterators take no workers in Keras 3)."""
    E = getattr(module, "OrderedEnqueuer", None)
    if E is None or not callable(getattr(E, "_run", None)):
        return
    orig_run = E._run

    @functools.wraps(orig_run)
    def _run(self):
        w = guard.call(_take_expected, self)
        try:
            if w is not None:
                guard.call(_start_draw, w, self)
            return orig_run(self)
        finally:
            _tls.watch = None

    E._run = _run
    keras_custom.wrap_get_index(module)


def _expect_enqueuer3(adapter):
    seq = adapter.py_dataset
    if _eligible(seq):
        return
    custom = keras_custom.of(seq)
    if custom is None:
        return
    w = _Pass(adapter, seq)
    w.custom, w.keras3 = custom, True
    workers = max(1, int(getattr(seq, "workers", 1)))
    w.shape = (workers, max(1, -(-int(getattr(seq, "max_queue_size", 10)) // workers)))
    # Only whole passes are followed: the pass ends the epoch, nothing is read past it.
    w.epoch = adapter.__dict__.get(_EPOCHS, -1) + 1
    with _lock:
        _expected[id(seq)] = w


def _patch_epoch_iterator(module):
    E = module.EpochIterator
    orig_init = E.__init__

    @functools.wraps(orig_init)
    def __init__(self, *args, **kwargs):
        orig_init(self, *args, **kwargs)
        guard.call(_steps_of_epoch_iterator, self)

    E.__init__ = __init__


def _steps_of_epoch_iterator(it):
    adapter = getattr(it, "data_adapter", None)
    if adapter is not None:
        adapter.__dict__[_STEPS] = getattr(it, "steps_per_epoch", None)
        adapter.__dict__[_EXEC] = getattr(it, "steps_per_execution", 1)


class _Pass:
    """One run of an adapter's generator: the batch order it draws, over one Sequence.

    Once reported, for a pass that serves more epochs (Keras 3, steps_per_epoch < len):
    `order` the pass's batch order, `pos` where its next epoch starts in it, `per_epoch` the
    batches an epoch takes, `arrays` [(first batch position, index_array)] the arrays the
    batches from each position on read (the last one: every batch not begun yet)."""
    __slots__ = ("adapter", "seq", "started", "order", "pos", "per_epoch", "arrays", "table",
                 "shape", "past", "shuffled", "left", "more", "custom", "batches", "epoch",
                 "keras3", "spill")

    def __init__(self, adapter, seq):
        self.adapter, self.seq = adapter, seq
        self.started = 0  # batches the generator has begun to read
        self.order = None
        self.shape = (0, 1)  # the LOADER's workers, prefetch_factor: one thread, in order
        self.past = 0  # batches read past an epoch's steps (an enqueuer's), reported with it
        # Whether it draws its batch order; an enqueuer's: the epoch's batches still to read
        # after this pass once reported, whether this pass is more of an epoch already reported.
        self.shuffled, self.left, self.more = False, None, False
        # An enqueuer's: the batches read past the epoch's steps that this pass does not hold
        # (read from the next pass's start).
        self.spill = 0
        # A Sequence of the user's own: its keras_custom.Custom, and the pass's batch order
        # once drawn.
        self.custom, self.batches = None, None
        # The epoch when known before the draw (Keras 3's enqueuer draws in its own thread as
        # on_epoch_begin starts it); whether the adapter is Keras 3's.
        self.epoch, self.keras3 = None, False


def _watch(gen, adapter, seq, shuffled):
    """The generator `gen`, reporting the pass's order at its first step (before any read).
    Over a Sequence of the user's own, each batch's opens are learned as it is read."""
    if guard.off:
        yield from gen
        return
    custom = None
    if not _eligible(seq):
        custom = guard.call(keras_custom.of, seq)
        if custom is None:
            yield from gen
            return
    w = _Pass(adapter, seq)
    w.shuffled, w.custom = shuffled, custom
    if shuffled:
        _tls.watch = w  # the first step's random.shuffle reports (_Random.shuffle)
    else:
        guard.call(_report, w, None)
    try:
        while True:
            w.started += 1  # each next of Keras's generator begins one batch
            cur = keras_custom.learning(custom)
            try:
                item = next(gen)
            finally:
                if w.started == 1:
                    _tls.watch = None
                if cur is not None:
                    learn.unwatch()
            if cur is not None:
                guard.call(_learned_in_pass, w, cur)
            yield item
    except StopIteration:
        return
    finally:
        gen.close()


def _learned_in_pass(w, cur):
    """After a pass's generator read its w.started-th batch of a Sequence of the user's own."""
    i = w.started - 1
    if w.batches is not None and i < len(w.batches):
        w.custom.learn(w.batches[i], cur)


def _eligible(seq):
    """A Sequence whose batch b is index_array[b*bs:(b+1)*bs] of its `filepaths`."""
    get = getattr(type(seq), "__getitem__", None)
    if get is None or getattr(get, "__qualname__", "") != "Iterator.__getitem__" or \
            not getattr(get, "__module__", "").split(".")[0] in ("keras", "tf_keras"):
        return False
    return all(hasattr(seq, a) for a in ("index_array", "batch_size", "n"))


def _filepaths(seq):
    try:
        paths = seq.filepaths
    except Exception:
        return None
    if not isinstance(paths, list) or len(paths) != seq.n:
        return None
    return paths


def _report(w, batch_order):
    with _lock:
        _report_locked(w, batch_order)


def _report_locked(w, batch_order):
    adapter, seq, c = w.adapter, w.seq, w.custom
    if batch_order is None:
        batch_order = range(len(seq))
    if c is not None:
        w.batches = list(batch_order)  # what its reads learn (_learned_in_pass)
    epoch = w.epoch if w.epoch is not None else adapter.__dict__.get(_EPOCHS, 0)
    rec = adapter.__dict__.get(_STREAM)
    if w.more:
        if rec is None or (c is not None and rec[2] != rec[1]):
            return  # more of an epoch not reported
        epoch = rec[1]  # another segment of the epoch reported last
    elif rec is not None and epoch <= rec[1]:
        return  # a second pass begun within one epoch (not fit's way): not reported
    known = False
    if c is not None:
        known = c.check()
        if c.stale:
            return
        table, index_array = c.table, None
    else:
        index_array = seq.index_array
        if index_array is None:
            return  # drawn by the first batch read (no peek before): not known yet
        table = tables.table_for(seq, _filepaths)
        if table is None:
            return
    if w.more:
        per_epoch = min(w.left, len(batch_order))
        w.left -= per_epoch
    else:
        per_epoch = _batches_per_epoch(adapter, len(batch_order))
        if c is not None and per_epoch < len(batch_order) and \
                (_PASS in adapter.__dict__ or w.keras3):
            return  # Keras 3, a pass serving several epochs: not followed for these
        if w.shape[0] > 0:  # an enqueuer's: an epoch of more steps reads on in its next pass
            w.left = (adapter.__dict__.get(_STEPS) or per_epoch) - per_epoch
        if _PASS not in adapter.__dict__:
            adapter.__dict__[_FIRST] = w  # tf.keras 2: its next epoch may be known early
    if w.shape[0] > 0 and per_epoch >= len(batch_order) and not (w.more and w.left <= 0):
        # the epoch's steps end with this pass: once they are taken the queue is empty and
        # the enqueuer begins the next pass, whose first batches the pool reads before fit
        # stops it (steps ending inside a pass: fit stops it first, the pool reads on in it)
        w.spill = w.past
    if rec is None:
        rec = adapter.__dict__[_STREAM] = [tables.new_stream(), -1, -1]
    rec[1] = epoch
    if c is not None:
        # Its table is indexed by batch. The first epoch learns it: nothing known yet, nor
        # which daemon reads it (Custom.learn), so it is not reported.
        if known:
            rec[2] = epoch
            _send(table, rec[0], c.files_per_batch(), epoch,
                  array("I", batch_order[:per_epoch + w.past]), w.shape)
        return
    bs = int(seq.batch_size)
    samples = index_array.tolist() if hasattr(index_array, "tolist") else list(index_array)
    flat = array("I")
    for b in batch_order[:per_epoch + w.past]:
        flat.extend(samples[b * bs:(b + 1) * bs])
    guess = None
    if per_epoch < len(batch_order) and _PASS in adapter.__dict__:
        # Keras 3: the pass goes on into the next epochs (_redrawn, _report_next)
        w.order, w.pos, w.per_epoch, w.table = batch_order, per_epoch, per_epoch, table
        w.arrays = [(0, index_array)]
        adapter.__dict__[_PASS] = w
        guess = _next_epoch_guess(w)
    _send(table, rec[0], bs, epoch, flat, w.shape, guess)


def _batches_per_epoch(adapter, n_batches):
    """The batches of a pass one epoch of fit reads: steps_per_epoch, rounded up to whole
    executions (Keras 3 reads steps_per_execution batches a step), at most the pass."""
    steps = adapter.__dict__.get(_STEPS)
    if steps is None or steps <= 0:
        return n_batches
    per_exec = adapter.__dict__.get(_EXEC) or 1
    if isinstance(per_exec, int) and per_exec > 1:
        steps = -(-steps // per_exec) * per_exec
    return min(steps, n_batches)


def _send(table, stream, bs, epoch, flat, shape=(0, 1), guess=None):
    """LOADER and the epoch's ORDER; then, if given, GUESS of the next epoch's likely files.
    Then the next epochs other adapters' on_epoch_end foresaw (_note_next), as GUESS frames:
    the daemon keeps the first made after a segment as its guess at the segment after it."""
    channel.hello_context.setdefault("framework", "keras")
    frames = [wire.loader(stream, max(1, bs), *shape)] + wire.order(table.key, stream, epoch, flat)
    if guess is not None:
        frames += wire.order(table.key, stream, epoch + 1, guess, wire.GUESS)
    tables.send_paths(table)
    channel.send(table.roots[0], frames)
    _next_epochs.pop(stream, None)  # reported: the guess at it is spent
    if stream in _streams_sent:
        _streams_sent.remove(stream)
    _streams_sent.append(stream)
    if guess is None:
        for other, (t, e, files) in list(_next_epochs.items()):
            channel.send(t.roots[0], wire.order(t.key, other, e, files, wire.GUESS))


def _note_next(adapter):
    """tf.keras 2, after an adapter's on_epoch_end drew the index_array of its next epoch: that
    epoch's first pass, guessed to the daemon before the epoch begins.
    - An adapter that does not shuffle (fit's validation_data) reads batch b as
      index_array[b*bs:(b+1)*bs], in order: exact, and known a whole training epoch before the
      next evaluation. The segments alternate (training, validation, maybe more of it), so it
      goes out as a GUESS after the next ORDER of another stream: the daemon takes the first
      GUESS after a segment as its guess at the segment after it.
    - One that shuffles draws its batch order with the global `random` as the epoch begins, a
      moment after this (after the evaluation, when fit validates): the guess draws it now from
      a copy of that RNG's state, exact unless something else draws from `random` in between
      (only the real ORDER is followed; a wrong guess costs spare room). Its epoch is the next
      segment: the GUESS goes out now.
    Without them an enqueuer's pool read its first max_queue_size + workers batches as the
    order was drawn, racing the fetches its report started (report_keras_e2e with
    fit(workers=4) and validation, 8 runs each: up to 111 of a validation epoch's 160 opens
    waited and up to 80 of a training epoch's 408; with them 0 in all 96 later validation
    node-epochs and at most 1 in 47 of 48 training ones, 34 in one)."""
    w = adapter.__dict__.get(_FIRST)
    rec = adapter.__dict__.get(_STREAM)
    if w is None or rec is None or (w.custom is not None and (w.custom.stale or
                                                              not w.custom.rooted)):
        return  # a Sequence of the user's own whose reads showed no file on a mount yet
    seq = w.seq
    order = list(range(len(seq)))
    if w.shuffled:
        rng = random.Random()
        rng.setstate(random.getstate())
        rng.shuffle(order)
    order = order[:_batches_per_epoch(adapter, len(order)) + w.past]
    if w.custom is not None:  # its table is indexed by batch
        table, flat = w.custom.table, array("I", order)
    else:
        index_array = seq.index_array
        table = tables.table_for(seq, _filepaths)
        if index_array is None or table is None:
            return
        bs = int(seq.batch_size)
        samples = index_array.tolist() if hasattr(index_array, "tolist") else list(index_array)
        flat = array("I")
        for b in order:
            flat.extend(samples[b * bs:(b + 1) * bs])
    epoch = adapter.__dict__.get(_EPOCHS, 0)
    with _lock:
        _next_epochs[rec[0]] = (table, epoch, flat)
        if w.shuffled or _streams_sent == [rec[0]]:
            channel.send(table.roots[0], wire.order(table.key, rec[0], epoch, flat, wire.GUESS))


def _next_epoch_guess(w):
    """Keras 3, a pass that goes on: the next epoch's batches as the array now in place
    slices them. Exact for the batches tf.data reads ahead before on_epoch_end redraws it
    (those open before the next epoch is reported); the rest read the array drawn then."""
    end = min(w.pos + w.per_epoch, len(w.order))
    return _slices(w, w.pos, end, last_array_only=True)


def _slices(w, start, end, last_array_only=False):
    """The sample indices of the pass's batches start..end-1, each from the array it reads
    (or all from the latest array noted)."""
    bs = int(w.seq.batch_size)
    flat = array("I")
    k = len(w.arrays) - 1 if last_array_only else 0
    for j in range(start, end):
        while k + 1 < len(w.arrays) and w.arrays[k + 1][0] <= j:
            k += 1
        b = w.order[j]
        part = w.arrays[k][1][b * bs:(b + 1) * bs]
        flat.extend(part.tolist() if hasattr(part, "tolist") else part)
    return flat


def _redrawn(w):
    """After the adapter's on_epoch_end (Keras 3): the batches of the pass begun from now on
    read the index_array it drew."""
    if w.order is None:
        return
    new = w.seq.index_array
    if new is not w.arrays[-1][1]:
        w.arrays.append((w.started, new))


def _report_next(w, epoch):
    """At on_epoch_begin (Keras 3): the epoch's batches of a pass drawn in an earlier epoch."""
    with _lock:
        adapter = w.adapter
        rec = adapter.__dict__.get(_STREAM)
        if w.order is None or rec is None or w.pos >= len(w.order) or epoch <= rec[1] or \
                w.seq.index_array is not w.arrays[-1][1]:
            # the pass is over, or index_array was drawn again by someone else (fit's
            # validation over the same iterator): what the batches read is not known
            adapter.__dict__[_PASS] = None
            return
        end = min(w.pos + w.per_epoch, len(w.order))
        flat = _slices(w, w.pos, end)
        rec[1] = epoch
        w.pos = end
        while len(w.arrays) > 1 and w.arrays[1][0] <= w.pos:
            del w.arrays[0]  # no batch still to report reads it
        guess = None
        if w.pos >= len(w.order):
            adapter.__dict__[_PASS] = None
        else:
            guess = _next_epoch_guess(w)
        _send(w.table, rec[0], int(w.seq.batch_size), epoch, flat, guess=guess)
