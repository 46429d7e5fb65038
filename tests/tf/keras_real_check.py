"""clairfs-order --sampler keras / keras-flow against the REAL Keras of this venv.

One process runs the whole grid (importing TensorFlow takes seconds):
- image_dataset_from_directory: the listing, read from the images the real
  pipeline yields (each PNG/GIF/BMP/JPEG is one flat colour that encodes its
  index). shuffle=False: the yielded order is the listing. shuffle=True, tf.keras
  2: files are opened in listing order and the decoded images shuffled by
  tf.data; that permutation is read from the real tf.data (Dataset.range(n)
  .shuffle(same buffer, same seed)) and inverted, which recovers the
  NumPy-shuffled listing. Keras >= 3.3: the paths are shuffled before they are
  opened, so the yielded order is the open order, compared as it is with
  clairfs-order's exact order (--driver loop).
- ImageDataGenerator.flow_from_directory: the files the iterator opens, logged
  by wrapping the image loader it calls (image_utils.load_img) and the batch
  method (markers only; behaviour unchanged), for next(it) and for a real
  model.fit of a tiny model, compared with clairfs-order byte for byte (fit
  with shuffle=True: the set of batches of each epoch).
- model.fit(it, steps_per_epoch=S): every batch read between two on_epoch_end
  calls (logged with the batch position __getitem__ was asked for) is checked
  against clairfs-order --batches (the candidate index arrays, positions,
  steps and read-ahead per epoch); the steps per epoch and the reads beyond
  them are counted; where the index array is exact the order is compared.
Usage: keras_real_check.py CLAIRFS_ORDER WORKDIR. Exit 0 = every case equal.
"""
import os
import subprocess
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from PIL import Image  # noqa: E402

ORDER, WORK = sys.argv[1], sys.argv[2]
if tf.__version__.startswith("2.15"):
    import keras  # keras 2.15 == tf.keras
    from keras.src.preprocessing import image as flow_module
else:
    import keras
    from keras.src.legacy.preprocessing import image as flow_module
KV = keras.__version__
SIZE = 8
failures = []
cases = 0


def colour(i):
    return ((i % 16) * 16 + 8, ((i // 16) % 16) * 16 + 8, (i // 256) * 16 + 8)


def decode(pixels):
    r, g, b = (float(np.mean(pixels[..., c])) for c in range(3))
    return int(round((r - 8) / 16)) + 16 * int(round((g - 8) / 16)) + 256 * int(round((b - 8) / 16))


def make_tree(root, layout):
    """layout: list of (relative path, PIL format or None for a text file)."""
    index = {}
    for i, (rel, fmt) in enumerate(layout):
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if fmt is None:
            with open(path, "w") as f:
                f.write("not an image\n")
            continue
        img = Image.new("RGB", (SIZE, SIZE), colour(i))
        img.save(path, format=fmt, **({"quality": 100} if fmt == "JPEG" else {}))
        index[i] = rel
    return index


def make_external(root, name, link, count, start):
    """Images in a directory outside the tree, reached through symlink `link`."""
    target = os.path.join(os.path.dirname(root), name)
    os.makedirs(target, exist_ok=True)
    index = {}
    for k in range(count):
        Image.new("RGB", (SIZE, SIZE), colour(start + k)).save(os.path.join(target, f"e{k}.png"))
        index[start + k] = f"{link}/e{k}.png"
    os.symlink(target, os.path.join(root, link))
    return index


def tree_a(root):
    layout = []
    for c, cls in enumerate(["cat", "dog", "Ému", ".hidden", "b"]):
        for k in range(c + 3):
            layout.append((f"{cls}/{k:02d}.png", "PNG"))
    layout += [("cat/sub/x.JPG", "JPEG"), ("cat/sub-2/y.jpeg", "JPEG"), ("cat/sub/deeper/z.Png", "PNG"),
               ("dog/anim.gif", "GIF"), ("dog/pic.bmp", "BMP"), ("dog/pic.ppm", "PPM"),
               ("dog/pic.TIF", "TIFF"), ("dog/imgpng", "PNG"), ("dog/notes.txt", None),
               ("b/.dot.png", "PNG"), ("b/ü ñ.png", "PNG"), ("real/r1.png", "PNG"),
               ("real/r2.png", "PNG"), ("top.png", "PNG")]
    index = make_tree(root, layout)
    os.makedirs(os.path.join(root, "empty"), exist_ok=True)
    index.update(make_external(root, "ext_class", "linked", 3, 500))  # a symlinked class
    index.update(make_external(root, "ext_sub", "dog/inner", 2, 600))  # a symlinked subdirectory
    return index


def tree_b(root):
    layout = [(f"c{c}/{k:03d}.png", "PNG") for c in range(3) for k in range(7 + 5 * c)]
    return make_tree(root, layout)


def run_order(args):
    p = subprocess.run([ORDER] + args, capture_output=True)
    return p.returncode, p.stdout.decode("utf-8", "surrogateescape"), p.stderr.decode()


def compare(name, expected, got):
    global cases
    cases += 1
    if expected != got:
        failures.append(name)
        k = next((i for i, (x, y) in enumerate(zip(expected, got)) if x != y), min(len(expected), len(got)))
        print(f"FAIL {name} (lengths {len(expected)} {len(got)}, first difference at {k})\n"
              f"  real:    {expected[k:k + 6]}\n  clairfs: {got[k:k + 6]}")


def check(name, ok, detail):
    global cases
    cases += 1
    if not ok:
        failures.append(name)
        print(f"FAIL {name}: {detail}")


# ---------------------------------------------------------------- listing
def rel_of(root, index, value):
    return index.get(value, f"<unknown {value}>")


def keras_listing_case(root, index, seed, batch, shuffle, split=None, subset=None, labels="inferred",
                       class_names=None, follow_links=False):
    kw = dict(image_size=(SIZE, SIZE), interpolation="nearest", batch_size=batch, shuffle=shuffle,
              seed=seed, labels=labels, follow_links=follow_links)
    if labels is None:
        kw["label_mode"] = None
    if class_names:
        kw["class_names"] = class_names
    if split:
        kw.update(validation_split=split, subset=subset)
    args = ["--sampler", "keras", "--root", root, "--keras-version", KV, "--seed", str(seed)]
    if not shuffle:
        args.append("--no-shuffle")
    if split:
        args += ["--validation-split", str(split), "--subset", subset]
    if labels is None:
        args += ["--labels", "none"]
    if class_names:
        args += ["--class-names", ",".join(class_names)]
    if follow_links:
        args.append("--follow-links")
    # From Keras 3.3 the paths are shuffled (tf.data, 8 x batch) before they
    # are opened: clairfs-order prints that exact order, here for a plain
    # iteration of the dataset (one iterator).
    paths_shuffled = tuple(int(p) for p in KV.split(".")[:2]) >= (3, 3)
    if paths_shuffled:
        args += ["--batch-size", "none" if batch is None else str(batch), "--driver", "loop"]
    name = f"keras {root} seed={seed} batch={batch} shuffle={shuffle} split={split}/{subset} labels={labels} classes={class_names} follow={follow_links}"
    try:
        ds = keras.utils.image_dataset_from_directory(root, **kw)
    except ValueError as e:  # Keras refuses: clairfs-order must refuse too
        rc, out, err = run_order(args)
        compare(name + f" refuses ({e})", True, rc != 0 and out == "")
        return
    got = []
    for batch_x in ds:
        x = (batch_x[0] if isinstance(batch_x, tuple) else batch_x).numpy()
        for img in (x if batch is not None else [x]):
            got.append(decode(img))
    n = len(got)
    if shuffle and not paths_shuffled:
        # tf.keras 2 opens the files in listing order and shuffles the decoded
        # images: undo the real shuffle to read the listing back.
        buf = batch * 8 if batch is not None else 1024
        perm = list(tf.data.Dataset.range(n).shuffle(buf, seed=seed).as_numpy_iterator())
        listing = [None] * n
        for k, p in enumerate(perm):
            listing[p] = got[k]
        got = listing
    real = [rel_of(root, index, v) for v in got]
    rc, out, err = run_order(args)
    if rc != 0:
        failures.append(name)
        print(f"FAIL {name}: clairfs-order exit {rc}: {err}")
        return
    compare(name, real, out.splitlines())


# ---------------------------------------------------------------- flow
LOG = []
_orig_load = flow_module.image_utils.load_img
_orig_batch = flow_module.DirectoryIterator._get_batches_of_transformed_samples


def logging_load(path, *a, **k):
    LOG.append(path)
    return _orig_load(path, *a, **k)


def logging_batch(self, index_array):
    LOG.append(id(self))  # batch marker: which iterator the next loads belong to
    return _orig_batch(self, index_array)


flow_module.image_utils.load_img = logging_load
flow_module.DirectoryIterator._get_batches_of_transformed_samples = logging_batch

# steps_case only: __getitem__'s batch position and on_epoch_end, as markers.
TRACE = False
_orig_getitem = flow_module.DirectoryIterator.__getitem__
_orig_epoch_end = flow_module.DirectoryIterator.on_epoch_end


def tracing_getitem(self, idx):
    if TRACE:
        LOG.append(("get", id(self), idx))
    return _orig_getitem(self, idx)


def tracing_epoch_end(self):
    # Logged once the new index array is in place: a read logged after it
    # slices that array; one logged before may still slice the old one, the
    # np.arange(n) _set_index_array holds meanwhile, or the new one.
    result = _orig_epoch_end(self)
    if TRACE:
        LOG.append(("end", id(self)))
    return result


flow_module.DirectoryIterator.__getitem__ = tracing_getitem
flow_module.DirectoryIterator.on_epoch_end = tracing_epoch_end

AUG = {
    "": {},
    "horizontal_flip=1,rotation_range=10": dict(horizontal_flip=True, rotation_range=10),
    "width_shift_range=0.1,height_shift_range=3,zoom_range=0.2,shear_range=5":
        dict(width_shift_range=0.1, height_shift_range=3, zoom_range=0.2, shear_range=5),
    "width_shift_range=-2:0:2,brightness_range=0.5:1.5,channel_shift_range=20,vertical_flip=1,zoom_range=0.9:1.0":
        dict(width_shift_range=[-2, 0, 2], brightness_range=[0.5, 1.5], channel_shift_range=20,
             vertical_flip=True, zoom_range=[0.9, 1.0]),
}


def split_batches(log, root, owner):
    """The batches iterator `owner` loaded (loads run single-threaded after their marker)."""
    batches, cur = [], None
    for entry in log:
        if isinstance(entry, int):
            if cur is not None:
                batches.append(cur)
            cur = [] if entry == owner else None
        elif cur is not None:
            cur.append(os.path.relpath(entry, root))
    if cur is not None:
        batches.append(cur)
    return batches


def flow_case(root, seed, batch, epochs, aug, shuffle=True, split=None, subset=None, protocol="next",
              fit_shuffle=True, classes=None, follow_links=False, with_validation=False):
    gen = flow_module.ImageDataGenerator(validation_split=split or 0.0, **AUG[aug])
    kw = dict(target_size=(SIZE, SIZE), batch_size=batch, shuffle=shuffle, seed=seed,
              class_mode="sparse", follow_links=follow_links)
    if classes:
        kw["classes"] = classes
    if subset:
        kw["subset"] = subset
    it = gen.flow_from_directory(root, **kw)
    n_batches = len(it)
    LOG.clear()
    if protocol == "next":
        try:
            for _ in range(epochs * n_batches):
                next(it)
        except ValueError as e:  # np.random.seed out of range: clairfs-order refuses too
            rc, out, err = run_order(args_of(root, seed, batch, epochs, aug, shuffle, split, subset,
                                             protocol, fit_shuffle, classes, follow_links))
            compare(f"flow seed={seed} refuses ({e})", True, rc != 0)
            return
        real_batches = split_batches(LOG, root, id(it))
    else:
        model = keras.Sequential([keras.layers.Input((SIZE, SIZE, 3)), keras.layers.Flatten(),
                                  keras.layers.Dense(max(it.num_classes, 1))])
        model.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        val = None
        if with_validation:  # the other subset, its own seed: must not disturb training
            val = gen.flow_from_directory(root, **dict(kw, subset="validation", seed=seed + 1000))
        model.fit(it, epochs=epochs, verbose=0, shuffle=fit_shuffle, validation_data=val)
        real_batches = split_batches(LOG, root, id(it))
    args = args_of(root, seed, batch, epochs, aug, shuffle, split, subset, protocol, fit_shuffle,
                   classes, follow_links, with_validation)
    name = (f"flow {os.path.basename(root)} seed={seed} batch={batch} epochs={epochs} aug='{aug}' "
            f"shuffle={shuffle} split={split}/{subset} {protocol} fit_shuffle={fit_shuffle} "
            f"classes={classes} follow={follow_links}")
    # Expected batch sizes per batch index, from the real iterator's length.
    sizes = [min(batch, it.n - k * batch) for k in range(n_batches)]
    return check_flow(name, args, real_batches, sizes, n_batches, it, batch, epochs, shuffle, protocol,
                      fit_shuffle, with_validation and KV.startswith("2"))


def args_of(root, seed, batch, epochs, aug, shuffle, split, subset, protocol, fit_shuffle, classes,
            follow_links, with_validation=False):
    args = ["--sampler", "keras-flow", "--root", root, "--keras-version", KV, "--batch-size", str(batch),
            "--epochs", str(epochs), "--augment", aug, "--protocol", protocol]
    if seed is not None:
        args += ["--seed", str(seed)]
    if not shuffle:
        args.append("--no-shuffle")
    if subset:
        args += ["--validation-split", str(split), "--subset", subset]
    if protocol == "fit":
        args += ["--fit-shuffle", "on" if fit_shuffle else "off"]
    if with_validation:
        args += ["--fit-validation-seed", str(seed + 1000)]
    if classes:
        args += ["--classes", ",".join(classes)]
    if follow_links:
        args.append("--follow-links")
    return args


def check_flow(name, args, real_batches, sizes, n_batches, it, batch, epochs, shuffle, protocol,
               fit_shuffle, validation_reseeds=False):
    if protocol == "next":
        rc, out, err = run_order(args)
        if rc != 0:
            failures.append(name)
            print(f"FAIL {name}: exit {rc}: {err}")
            return
        compare(name, [p for b in real_batches for p in b], out.splitlines())
        return
    # fit: the batches read before training (Keras 3 reads 2, tf.keras 1).
    pre = min(2 if KV.startswith("3") else 1, n_batches)
    spec, epochs_real = real_batches[:pre], real_batches[pre:]
    unequal = it.n % batch != 0 and n_batches > 1 and not validation_reseeds
    for e in range(epochs):
        real = epochs_real[e * n_batches:(e + 1) * n_batches]
        rc, out, err = run_order(args[:args.index("--epochs")] + ["--epoch", str(e)] +
                                 args[args.index("--epochs") + 2:])
        if fit_shuffle and shuffle and unequal and e > 0:
            # Unknowable: clairfs-order must refuse and say how to fix it.
            compare(name + f" epoch {e} refuses", True, rc == 1 and "shuffle=False to model.fit" in err)
            continue
        if rc != 0:
            failures.append(name)
            print(f"FAIL {name} epoch {e}: exit {rc}: {err}")
            return
        lines = out.splitlines()
        ours, pos = [], 0
        if e == 0:  # the pre-training batches come first
            for s in sizes[:pre]:
                ours.append(lines[pos:pos + s])
                pos += s
            compare(name + " spec batches", spec, ours)
            ours = []
        for s in sizes:
            ours.append(lines[pos:pos + s])
            pos += s
        compare(name + f" epoch {e} length", pos, len(lines))
        if fit_shuffle:
            compare(name + f" epoch {e}", sorted(real), sorted(ours))
        else:
            compare(name + f" epoch {e}", real, ours)


READ_AHEAD_SEEN = []  # (case, reads beyond the trained ones): reported, not asserted


def steps_case(root, seed, batch, steps, epochs, aug, fit_shuffle=True):
    """model.fit(it, steps_per_epoch=steps): every batch read while an index
    array is in effect (between two on_epoch_end calls) must be a slice of one
    of clairfs-order's candidate arrays for that epoch, at a position it may
    read; the steps of each epoch and the reads beyond them are counted; where
    the array is exact the batches trained on are compared with the order
    (fit(shuffle=False): in order; shuffle=True: as a set)."""
    global TRACE
    gen = flow_module.ImageDataGenerator(**AUG[aug])
    it = gen.flow_from_directory(root, target_size=(SIZE, SIZE), batch_size=batch, seed=seed,
                                 class_mode="sparse")
    n_batches = len(it)
    steps_seen = []

    class Steps(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            steps_seen.append(0)

        def on_train_batch_end(self, b, logs=None):
            steps_seen[-1] += 1

    model = keras.Sequential([keras.layers.Input((SIZE, SIZE, 3)), keras.layers.Flatten(),
                              keras.layers.Dense(max(it.num_classes, 1))])
    model.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    LOG.clear()
    TRACE = True
    try:
        model.fit(it, epochs=epochs, steps_per_epoch=steps, verbose=0, shuffle=fit_shuffle,
                  callbacks=[Steps()])
    finally:
        TRACE = False
    name = (f"steps {os.path.basename(os.path.dirname(root))} seed={seed} batch={batch} "
            f"steps={steps}/{n_batches} epochs={epochs} aug='{aug}' fit_shuffle={fit_shuffle}")
    # (window, position, files): window -1 = read before training (spec /
    # peek), then the epoch whose index array was in effect (Keras 3 calls
    # on_epoch_end once before epoch 0, tf.keras 2 does not).
    keras3 = KV.startswith("3")
    reads, ends, cur = [], 0, None
    for entry in LOG:
        if isinstance(entry, tuple) and entry[1] == id(it):
            if entry[0] == "end":
                ends += 1
            else:
                window = ends - 1 if keras3 else (ends if reads else -1)
                cur = [window, entry[2], []]
                reads.append(cur)
        elif isinstance(entry, str) and cur is not None:
            cur[2].append(os.path.relpath(entry, root))
    args = ["--sampler", "keras-flow", "--root", root, "--keras-version", KV, "--batch-size",
            str(batch), "--seed", str(seed), "--augment", aug, "--protocol", "fit",
            "--fit-shuffle", "on" if fit_shuffle else "off", "--steps-per-epoch", str(steps)]
    rc, out, err = run_order(args + ["--epochs", str(epochs), "--batches", "--indices"])
    rc2, paths, err2 = run_order(["--sampler", "keras-flow", "--root", root, "--no-shuffle",
                                  "--batch-size", str(batch)])
    if rc != 0 or rc2 != 0:
        failures.append(name)
        print(f"FAIL {name}: clairfs-order exit {rc}/{rc2}: {err}{err2}")
        return
    path_of = paths.splitlines()
    model_epochs = []
    for line in out.splitlines():
        words = line.split()
        if words[0] == "epoch":
            model_epochs.append({"trains": int(words[3]), "ahead": int(words[5]),
                                 "positions": [int(w) for w in words[7:]], "perms": []})
        else:
            model_epochs[-1]["perms"].append([path_of[int(w)] for w in words[1:]])
    compare(name + " steps per epoch", [m["trains"] for m in model_epochs], steps_seen)
    pre = min(2 if keras3 else 1, n_batches)
    compare(name + " reads before training", pre, sum(1 for r in reads if r[0] == -1))
    trained = sum(m["trains"] for m in model_epochs)
    extra = len(reads) - pre - trained
    bound = model_epochs[-1]["ahead"] if keras3 else sum(m["ahead"] for m in model_epochs)
    check(name + f" reads beyond the trained ones within 0..{bound}", 0 <= extra <= bound,
          f"{extra} of {len(reads)} reads")
    READ_AHEAD_SEEN.append(extra)
    for e, m in enumerate(model_epochs):
        window = [r for r in reads if r[0] == e]
        last = m["positions"][-1]
        allowed = set(m["positions"]) | set(range(last + 1, last + 1 + m["ahead"]))
        sliced = [[p[k * batch:(k + 1) * batch] for p in m["perms"]] for _, k, _ in window]
        if window and e + 1 < len(model_epochs):
            # The read in flight at the next on_epoch_end: the next epoch's arrays too.
            k = window[-1][1]
            sliced[-1] += [p[k * batch:(k + 1) * batch] for p in model_epochs[e + 1]["perms"]]
        bad = [(k, files) for (_, k, files), cands in zip(window, sliced)
               if k not in allowed or files not in cands]
        check(name + f" epoch {e}: every read is a slice of one of {len(m['perms'])} candidate "
              f"arrays", not bad, f"not: {bad[:2]}")
        if len(m["perms"]) != 1:
            continue
        # Exact index array: the batches trained on, from the reads.
        if keras3:
            first = pre + sum(x["trains"] for x in model_epochs[:e])
            real = [r[2] for r in reads[first:first + m["trains"]]]
        else:
            real = [r[2] for r in window if r[1] < steps][:m["trains"]] if not fit_shuffle else None
        rc, order, err = run_order(args + ["--epoch", str(e)])
        if rc != 0:
            failures.append(name)
            print(f"FAIL {name} epoch {e}: exit {rc}: {err}")
            continue
        lines = order.splitlines()
        if e == 0:
            lines = lines[sum(len(r[2]) for r in reads[:pre]):]
        ours = [lines[i * batch:(i + 1) * batch] for i in range((len(lines) + batch - 1) // batch)]
        if fit_shuffle:
            # Which batches Python's random picks is unknowable: every batch
            # trained on is one of the epoch's.
            if keras3:
                stray = [b for b in real if b not in ours]
                check(name + f" epoch {e}: every batch trained on is one of the epoch's", not stray,
                      f"not: {stray[:2]}")
        else:
            compare(name + f" epoch {e} order", ours, real)


def main():
    a = os.path.join(WORK, "a", "root")
    b = os.path.join(WORK, "b", "root")
    ia = tree_a(a)
    ib = tree_b(b)
    for root, index in ((a, ia), (b, ib)):
        for seed in (0, 7, 123456, 4294967295):
            for batch in (1, 3, 32, None):
                keras_listing_case(root, index, seed, batch, True)
            keras_listing_case(root, index, seed, 4, False)
        for split in (0.2, 0.5, 0.01):
            for subset in ("training", "validation"):
                keras_listing_case(root, index, 11, 5, True, split, subset)
                keras_listing_case(root, index, 11, 5, False, split, subset)
        keras_listing_case(root, index, 3, 4, True, labels=None)
        keras_listing_case(root, index, 3, 4, False, labels=None, follow_links=True)
    keras_listing_case(a, ia, 5, 4, False, follow_links=True)
    keras_listing_case(a, ia, 5, 4, False, class_names=["real", "b", "cat", "dog", "linked", "Ému", "empty"]
                       if KV.startswith("2") else ["linked", "b", "cat"])
    keras_listing_case(b, ib, 5, 4, True, class_names=["c2", "c0", "c1"])

    for root in (a, b):
        for seed in (0, 42):
            for batch in (1, 4, 7):
                for aug in AUG:
                    flow_case(root, seed, batch, 3, aug)
            flow_case(root, seed, 5, 3, "", shuffle=False)
            for subset in ("training", "validation"):
                flow_case(root, seed, 4, 3, "horizontal_flip=1,rotation_range=10", split=0.3, subset=subset)
        flow_case(root, 9, 4, 3, "", follow_links=True)
    flow_case(a, 3, 4, 3, "", classes=["dog", ".hidden", "linked", "nope"])
    # model.fit: batch sizes that divide n (exact every epoch) and that do not.
    nb = 7 + 12 + 17
    for aug in AUG:
        flow_case(b, 5, 4, 3, aug, protocol="fit")           # 36 % 4 == 0
        flow_case(b, 5, 5, 3, aug, protocol="fit", fit_shuffle=False)
    flow_case(b, 8, 5, 3, "", protocol="fit")                # refuses epochs >= 1
    flow_case(b, 8, 6, 3, "", protocol="fit", shuffle=False)
    flow_case(a, 2, 3, 3, "horizontal_flip=1,rotation_range=10", protocol="fit", fit_shuffle=False)
    flow_case(b, 5, 4, 3, "", protocol="fit", split=0.25, subset="training")
    flow_case(b, 5, 40, 3, "", protocol="fit")                # one batch: exact
    # 28 training images (per class 6 + 9 + 13), validation_data = the other subset.
    flow_case(b, 7, 4, 3, "horizontal_flip=1,rotation_range=10", protocol="fit", split=0.25,
              subset="training", with_validation=True)
    flow_case(b, 7, 3, 3, "", protocol="fit", split=0.25, subset="training", fit_shuffle=False,
              with_validation=True)
    flow_case(b, 8, 3, 3, list(AUG)[3], protocol="fit", split=0.4, subset="training",
              with_validation=True)
    flow_case(b, 6, 40, 3, "horizontal_flip=1,rotation_range=10", protocol="fit", fit_shuffle=False)
    flow_case(b, 6, 36, 3, "", protocol="fit")
    flow_case(a, 6, 100, 3, "", protocol="next")
    flow_case(b, 4294967290, 4, 3, "", protocol="next")   # NumPy raises at batch 6
    flow_case(b, 4294967000, 4, 3, "", protocol="next")
    # model.fit(steps_per_epoch=S): S below len(it) (Keras 3 cuts its pass of
    # 9 batches into epochs of 4, 4, 1), equal to it, short last batches.
    aug1, aug2 = "horizontal_flip=1,rotation_range=10", list(AUG)[2]
    steps_case(b, 5, 4, 4, 4, "")
    steps_case(b, 5, 4, 4, 4, aug1, fit_shuffle=False)
    steps_case(b, 11, 5, 3, 4, aug2, fit_shuffle=False)   # 36 % 5 != 0
    steps_case(b, 11, 5, 3, 3, aug1)
    steps_case(b, 7, 4, 9, 3, aug1)                       # S == len(it)
    steps_case(b, 7, 5, 8, 3, "", fit_shuffle=False)
    steps_case(b, 7, 5, 8, 3, aug1)                       # two candidates from epoch 1
    steps_case(a, 2, 3, 2, 4, aug1, fit_shuffle=False)
    steps_case(b, 3, 4, 1, 4, "")
    print(f"keras {KV}: steps_per_epoch read-ahead seen (reads beyond the trained ones): "
          f"{READ_AHEAD_SEEN}")
    assert nb == 36
    print(f"keras {KV}: {cases} comparisons, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
