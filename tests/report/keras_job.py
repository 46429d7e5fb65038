"""A small Keras training job for the reporter's tests (Pattern A): fit over
ImageDataGenerator.flow_from_directory, seeded, in whichever Keras line the venv has.
It records every batch the iterator loads (the sample indices, tagged with the run of fit's
generator that asked for it, so read-ahead past steps_per_epoch is told apart), the losses
and a hash of the weights after training.

usage: keras_job.py DATA_DIR OUT.json CONFIG_JSON
CONFIG: {"steps": S or null, "epochs": E, "batch": B, "seed": N, "shuffle": bool (fit's),
         "per_execution": compile's steps_per_execution, "workers": fit's (tf.keras 2),
         "val_steps": validation_steps over a second iterator of DATA_DIR,
         "custom": "plain" or "reshuffle": fit over a Sequence (PyDataset) of the job's own
         instead, whose batch b opens its files with PIL; "reshuffle" redraws its sample
         order in on_epoch_end; "memory" loads every file up front and opens none after. Its loads are [pass, batch index, [sample, ...]]. With
         "workers" (tf.keras 2: fit's, Keras 3: the PyDataset's) its pool reads them.}
"""
import hashlib
import json
import os
import sys

import numpy as np
import tensorflow as tf

# The frames of the adapters' generators (tf.keras 2, Keras 3): one per pass of fit's.
GENERATORS = ("generator_fn", "_finite_generator")


def pass_of(frame, passes):
    """The number of the adapter generator's frame on the stack, or of the OrderedEnqueuer
    (fit with workers > 1) whose pool thread runs the load (0, 1, ... as first seen), or None
    (the adapter's peek). `passes` keeps the frames and enqueuer ids, so no id is reused."""
    while frame is not None:
        code = frame.f_code
        if "keras" in code.co_filename and code.co_name in GENERATORS + ("get_index",):
            key = ("uid", frame.f_locals["uid"]) if code.co_name == "get_index" else frame
            for n, k in enumerate(passes):
                if k is key or (isinstance(k, tuple) and k == key):
                    return n
            passes.append(key)
            return len(passes) - 1
        frame = frame.f_back
    return None


def small_model(classes, per_execution=1):
    layers = tf.keras.layers
    model = tf.keras.Sequential([
        tf.keras.Input(shape=(8, 8, 3)),
        layers.Conv2D(4, 3, activation="relu"),
        layers.GlobalAveragePooling2D(),
        layers.Dense(classes),
    ])
    model.compile(optimizer=tf.keras.optimizers.SGD(learning_rate=0.1),
                  loss=tf.keras.losses.CategoricalCrossentropy(from_logits=True),
                  steps_per_execution=per_execution)
    return model


def custom_sequence(data, bs, kind, loads, passes, workers=1):
    """A Sequence of the job's own over DATA_DIR's class folders (PIL opens each file);
    Keras 3: a PyDataset with `workers`."""
    from PIL import Image
    base = getattr(tf.keras.utils, "PyDataset", None)
    kw = {"workers": workers} if base is not None and workers > 1 else {}
    base = base or tf.keras.utils.Sequence

    class Files(base):
        def __init__(self):
            super().__init__(**kw)
            classes = sorted(os.listdir(data))
            self.paths, self.labels = [], []
            for k, c in enumerate(classes):
                for f in sorted(os.listdir(os.path.join(data, c))):
                    self.paths.append(os.path.join(data, c, f))
                    self.labels.append(k)
            self.classes = len(classes)
            self.perm = list(range(len(self.paths)))
            self.memory = [self.load(p) for p in self.paths] if kind == "memory" else None

        def load(self, path):
            return np.asarray(Image.open(path).convert("RGB").resize((8, 8)), dtype=np.float32)

        def __len__(self):
            return -(-len(self.paths) // bs)

        def __getitem__(self, b):
            idx = self.perm[b * bs:(b + 1) * bs]
            loads.append([pass_of(sys._getframe(1), passes), b, idx])
            x = np.stack([(self.memory[i] if self.memory else self.load(self.paths[i])) / 255
                          for i in idx])
            y = np.eye(self.classes, dtype=np.float32)[[self.labels[i] for i in idx]]
            return x, y

        def on_epoch_end(self):
            if kind == "reshuffle":
                np.random.shuffle(self.perm)

    return Files()


def main():
    data, out, cfg = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    tf.keras.utils.set_random_seed(cfg.get("seed", 1))
    if cfg.get("custom"):
        return main_custom(data, out, cfg)
    gen = tf.keras.preprocessing.image.ImageDataGenerator(
        rescale=1.0 / 255, horizontal_flip=True, width_shift_range=0.1)
    it = gen.flow_from_directory(data, target_size=(8, 8), batch_size=cfg.get("batch", 4),
                                 seed=cfg.get("seed", 1))
    loads, passes = [], []
    make_batch = it._get_batches_of_transformed_samples

    def logged(index_array):
        loads.append([pass_of(sys._getframe(1), passes), [int(j) for j in index_array]])
        return make_batch(index_array)

    it._get_batches_of_transformed_samples = logged
    extra = {"workers": cfg["workers"]} if cfg.get("workers", 1) > 1 else {}  # tf.keras 2
    val_loads = []
    if cfg.get("val_steps"):
        # validation_data a second iterator over the same files, validation_steps more than
        # its batches (Horovod's Keras ImageNet example: 3 x len // ranks)
        vit = tf.keras.preprocessing.image.ImageDataGenerator(rescale=1.0 / 255).flow_from_directory(
            data, target_size=(8, 8), batch_size=cfg.get("batch", 4), seed=cfg.get("seed", 1))
        make_val = vit._get_batches_of_transformed_samples

        def val_logged(index_array):
            val_loads.append([pass_of(sys._getframe(1), passes), [int(j) for j in index_array]])
            return make_val(index_array)

        vit._get_batches_of_transformed_samples = val_logged
        extra.update(validation_data=vit, validation_steps=cfg["val_steps"])
    model = small_model(it.num_classes, cfg.get("per_execution", 1))
    hist = model.fit(it, steps_per_epoch=cfg.get("steps"), epochs=cfg.get("epochs", 3),
                     shuffle=cfg.get("shuffle", True), verbose=0, **extra)
    h = hashlib.blake2b(digest_size=16)
    for w in model.get_weights():
        h.update(np.ascontiguousarray(w).tobytes())
    result = {"pid": os.getpid(), "keras": tf.keras.__version__ if hasattr(tf.keras, "__version__")
              else "", "len": len(it), "batch": it.batch_size, "loads": loads, "val_loads": val_loads,
              "loss": [float(x) for x in hist.history["loss"]], "weights": h.hexdigest(),
              "filepaths": [os.path.relpath(p, data) for p in it.filepaths]}
    with open(out, "w") as f:
        json.dump(result, f)


def main_custom(data, out, cfg):
    loads, passes = [], []
    workers = cfg.get("workers", 1)
    seq = custom_sequence(data, cfg.get("batch", 4), cfg["custom"], loads, passes, workers)
    keras2 = not hasattr(tf.keras.utils, "PyDataset")
    extra = {"workers": workers} if keras2 and workers > 1 else {}
    model = small_model(seq.classes)
    hist = model.fit(seq, steps_per_epoch=cfg.get("steps"), epochs=cfg.get("epochs", 3),
                     shuffle=cfg.get("shuffle", True), verbose=0, **extra)
    h = hashlib.blake2b(digest_size=16)
    for w in model.get_weights():
        h.update(np.ascontiguousarray(w).tobytes())
    result = {"pid": os.getpid(), "len": len(seq), "batch": cfg.get("batch", 4), "loads": loads,
              "loss": [float(x) for x in hist.history["loss"]], "weights": h.hexdigest(),
              "filepaths": [os.path.relpath(p, data) for p in seq.paths]}
    with open(out, "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main()
