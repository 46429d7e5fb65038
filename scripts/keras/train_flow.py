#!/usr/bin/env python3
"""Pattern A of the Horovod + Keras tutorials, written as users write it: an
ImageDataGenerator with augmentation, flow_from_directory with a seed (the
same on every rank), a small CNN, fit with steps_per_epoch = batches //
ranks. It knows nothing of clairfs: point it at any directory of class
folders.

usage: mpiexec -n 2 VENV/bin/python train_flow.py DATA [--epochs E]
       [--batch-size B] [--seed S] [--report FILE] [--sample-log FILE]
       [--checkpoint-dir DIR] [--deterministic] [--workers N] [--val-data DIR]
       [--sequence]
--sequence reads through a Sequence (Keras 3: PyDataset) of the script's own
instead, as many scripts do: each rank takes every ranks-th file of the sorted
class folders, batch b opens its files with PIL, and fit reads all of its
batches every epoch (no augmentation); --workers N loads them in N threads
(tf.keras 2: fit's workers, Keras 3: the PyDataset's).
Horovod (Keras 2 line) averages gradients; without it (Keras 3 line) the
ranks come from the launcher's environment and train independently.
"""
import argparse
import io
import os
import sys

import numpy as np
import tensorflow as tf

import common


def main():
    ap = argparse.ArgumentParser()
    common.add_common_args(ap)
    ap.add_argument("--val-data", help="validate on this directory after every epoch, as "
                    "Horovod's Keras ImageNet example does (validation_steps = 3 x its "
                    "batches // ranks)")
    ap.add_argument("--workers", type=int, default=1,
                    help="fit(workers=N), tf.keras 2 only (with --sequence also Keras 3's "
                         "PyDataset): N threads load the batches (Horovod's Keras ImageNet "
                         "example uses 4)")
    ap.add_argument("--sequence", action="store_true",
                    help="read through a Sequence of the script's own, sharded by rank")
    a = ap.parse_args()
    rank, size = common.start(a)
    if a.sequence:
        return train_sequence(a, rank, size)

    gen = tf.keras.preprocessing.image.ImageDataGenerator(
        horizontal_flip=True, rotation_range=10, width_shift_range=0.1, zoom_range=0.1)
    it = gen.flow_from_directory(a.data, target_size=(a.image_size, a.image_size),
                                 batch_size=a.batch_size, seed=a.seed)
    log = common.SampleLog(a.sample_log and "%s.rank%d" % (a.sample_log, rank))
    if a.sample_log:
        # Record each batch exactly as the iterator hands it to the model, and
        # in FILE.rankN.files the files it was made of: per batch a line of
        # dataset indices, then each file's name and a hash of the bytes the
        # loader read (its one read of the file, handed on as a BytesIO).
        files = open("%s.rank%d.files" % (a.sample_log, rank), "w")
        image_utils = sys.modules[type(it).__module__].image_utils
        load_img = image_utils.load_img

        def load_logged(path, *args, **kwargs):
            with open(path, "rb") as f:
                data = f.read()
            name = os.path.relpath(path, a.data)
            files.write("%s %s\n" % (name, common.blake2b_hex(data)))
            return load_img(io.BytesIO(data), *args, **kwargs)

        image_utils.load_img = load_logged
        make_batch = it._get_batches_of_transformed_samples

        def logged(index_array):
            files.write("batch %s\n" % " ".join(str(int(j)) for j in index_array))
            x, y = make_batch(index_array)
            for xi, yi in zip(x, y):
                log.add(xi.tobytes(), yi.tobytes())
            files.flush()
            return x, y

        it._get_batches_of_transformed_samples = logged

    model = common.small_cnn(a.image_size, it.num_classes)
    common.compile_model(model, a.lr, size)
    steps = max(1, len(it) // size)
    extra = {"workers": a.workers} if a.workers > 1 else {}  # Keras 3's fit has no workers
    if a.val_data:
        val = tf.keras.preprocessing.image.ImageDataGenerator(zoom_range=(0.875, 0.875))
        val_it = val.flow_from_directory(a.val_data, target_size=(a.image_size, a.image_size),
                                         batch_size=a.batch_size, seed=a.seed)
        extra.update(validation_data=val_it, validation_steps=max(1, 3 * len(val_it) // size))
    model.fit(it, steps_per_epoch=steps, epochs=a.epochs,
              callbacks=common.callbacks(rank, size, a.checkpoint_dir, a.report,
                                                 a.step_ms),
              verbose=2 if rank == 0 else 0, **extra)
    log.close()
    return 0


def file_sequence(data, batch_size, image_size, rank, size, workers):
    from PIL import Image
    base = getattr(tf.keras.utils, "PyDataset", None)
    kw = {"workers": workers} if base is not None and workers > 1 else {}
    base = base or tf.keras.utils.Sequence

    class Files(base):
        """Every size-th file of the class folders from `rank` on, batch_size at a time."""

        def __init__(self):
            super().__init__(**kw)
            classes = sorted(d for d in os.listdir(data) if os.path.isdir(os.path.join(data, d)))
            found = [(os.path.join(data, c, f), k) for k, c in enumerate(classes)
                     for f in sorted(os.listdir(os.path.join(data, c)))]
            self.files = found[rank::size]
            self.num_classes = len(classes)

        def __len__(self):
            return -(-len(self.files) // batch_size)

        def __getitem__(self, b):
            part = self.files[b * batch_size:(b + 1) * batch_size]
            x = np.stack([np.asarray(Image.open(p).convert("RGB").resize((image_size, image_size)),
                                     dtype=np.float32) for p, _ in part])
            y = np.eye(self.num_classes, dtype=np.float32)[[k for _, k in part]]
            return x, y

    return Files()


def train_sequence(a, rank, size):
    seq = file_sequence(a.data, a.batch_size, a.image_size, rank, size, a.workers)
    model = common.small_cnn(a.image_size, seq.num_classes)
    common.compile_model(model, a.lr, size)
    keras2 = not hasattr(tf.keras.utils, "PyDataset")
    extra = {"workers": a.workers} if keras2 and a.workers > 1 else {}
    model.fit(seq, epochs=a.epochs,
              callbacks=common.callbacks(rank, size, a.checkpoint_dir, a.report, a.step_ms),
              verbose=2 if rank == 0 else 0, **extra)
    return 0


if __name__ == "__main__":
    sys.exit(main())
