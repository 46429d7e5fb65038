#!/usr/bin/env python3
"""The tf.data guide's pipeline, written as users write it: the file names
from tf.data.Dataset.list_files (shuffled, seeded), sharded by rank, each
file read and decoded in a parallel map, batched, prefetched, fit. The label
is the file's class folder. It knows nothing of clairfs: point it at any
directory of class folders.

usage: mpiexec -n 2 VENV/bin/python train_files.py DATA [--epochs E]
       [--batch-size B] [--seed S] [--files-seed S|none] [--report FILE]
       [--sample-log FILE] [--checkpoint-dir DIR] [--deterministic]
Horovod (Keras 2 line) averages gradients; without it (Keras 3 line) the
ranks come from the launcher's environment and train independently.
"""
import argparse
import os
import sys

import tensorflow as tf

import common


def main():
    ap = argparse.ArgumentParser()
    common.add_common_args(ap)
    ap.add_argument("--files-seed", default=None,
                    help="list_files' seed (default: --seed; 'none': seed=None, the op seed "
                         "TensorFlow derives from the global seed, or a random one without it)")
    a = ap.parse_args()
    files_seed = a.seed if a.files_seed is None else (
        None if a.files_seed == "none" else int(a.files_seed))
    rank, size = common.start(a)

    class_names = sorted(e.name for e in os.scandir(a.data) if e.is_dir())
    names = tf.constant(class_names)
    size_px = a.image_size

    def load(path):
        label = tf.argmax(tf.cast(tf.strings.split(path, os.sep)[-2] == names, tf.int32))
        image = tf.io.decode_image(tf.io.read_file(path), channels=3, expand_animations=False)
        image = tf.image.resize(image, [size_px, size_px])
        return image, tf.one_hot(label, len(class_names))

    files = tf.data.Dataset.list_files(os.path.join(a.data, "*", "*"), seed=files_seed)
    ds = files.shard(size, rank).map(load, num_parallel_calls=tf.data.AUTOTUNE)
    ds = ds.batch(a.batch_size)
    log = common.SampleLog(a.sample_log and "%s.rank%d" % (a.sample_log, rank))
    if a.sample_log:
        def record(x, y):
            for xi, yi in zip(x.numpy(), y.numpy()):
                log.add(xi.tobytes(), yi.tobytes())
            return x, y

        ds = ds.map(lambda x, y: tf.py_function(record, [x, y], [x.dtype, y.dtype]))
        ds = ds.map(lambda x, y: (tf.ensure_shape(x, [None, size_px, size_px, 3]),
                                  tf.ensure_shape(y, [None, len(class_names)])))
    ds = ds.prefetch(tf.data.AUTOTUNE)

    model = common.small_cnn(a.image_size, len(class_names))
    common.compile_model(model, a.lr, size)
    model.fit(ds, epochs=a.epochs, callbacks=common.callbacks(rank, size, a.checkpoint_dir, a.report,
                                                 a.step_ms),
              verbose=2 if rank == 0 else 0)
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
