#!/usr/bin/env python3
"""Pattern B of the Horovod + Keras tutorials, written as users write it:
image_dataset_from_directory with batch_size=1 and a seed, sharded by rank
after loading (so every rank opens every file), batched, fit. It knows
nothing of clairfs: point it at any directory of class folders.

usage: mpiexec -n 2 VENV/bin/python train_dataset.py DATA [--epochs E]
       [--batch-size B] [--seed S] [--dataset-seed S|none] [--report FILE] [--sample-log FILE]
       [--checkpoint-dir DIR] [--deterministic]
Horovod (Keras 2 line) averages gradients; without it (Keras 3 line) the
ranks come from the launcher's environment and train independently.
"""
import argparse
import sys

import tensorflow as tf

import common


def main():
    ap = argparse.ArgumentParser()
    common.add_common_args(ap)
    ap.add_argument("--dataset-seed", default=None,
                    help="image_dataset_from_directory's seed (default: --seed; 'none': seed=None, "
                         "Keras draws one from NumPy's global generator)")
    a = ap.parse_args()
    dataset_seed = a.seed if a.dataset_seed is None else (
        None if a.dataset_seed == "none" else int(a.dataset_seed))
    rank, size = common.start(a)

    ds = tf.keras.utils.image_dataset_from_directory(
        a.data, batch_size=1, seed=dataset_seed, image_size=(a.image_size, a.image_size),
        label_mode="categorical")
    classes = len(ds.class_names)
    # As in the tutorials: each element is a batch of one image; every rank
    # loads every file and keeps its shard, then batches (and drops the
    # size-one batch axis the loader added).
    ds = ds.shard(size, rank).batch(a.batch_size)
    ds = ds.map(lambda x, y: (tf.squeeze(x, 1), tf.squeeze(y, 1)))
    log = common.SampleLog(a.sample_log and "%s.rank%d" % (a.sample_log, rank))
    if a.sample_log:
        def record(x, y):
            for xi, yi in zip(x.numpy(), y.numpy()):
                log.add(xi.tobytes(), yi.tobytes())
            return x, y

        ds = ds.map(lambda x, y: tf.py_function(record, [x, y], [x.dtype, y.dtype]))
        ds = ds.map(lambda x, y: (tf.ensure_shape(x, [None, a.image_size, a.image_size, 3]),
                                  tf.ensure_shape(y, [None, classes])))

    model = common.small_cnn(a.image_size, classes)
    common.compile_model(model, a.lr, size)
    model.fit(ds, epochs=a.epochs, callbacks=common.callbacks(rank, size, a.checkpoint_dir, a.report,
                                                 a.step_ms),
              verbose=2 if rank == 0 else 0)
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
