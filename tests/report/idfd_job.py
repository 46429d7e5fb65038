"""A small Keras training job for the reporter's tests (Pattern B): fit over
image_dataset_from_directory(batch_size=1).shard(n, r).batch(B), in whichever Keras line the
venv has. It records the samples of every batch fit read (each image of make_folder is one
colour, so its pixels name its file), one more iteration of the same dataset after fit, and,
for a reference directory (a copy of the data off the mount: not reported), the orders of the
first iterations of the same pipeline built afresh with the seed given.

usage: idfd_job.py DATA_DIR OUT.json CONFIG_JSON
CONFIG: {"seed": S or null, "numpy_seed": N or null, "global_seed": G or null,
         "shard": [n, r] or null, "batch": B, "epochs": E, "ref": DIR or null,
         "ref_seed": S (for the reference; default seed), "ref_iters": M,
         "steps_per_epoch": S or null (fit's), "loop": false (true: E passes of a plain
         `for x in ds` instead of fit), "unread": U (iterators made and dropped unread after
         fit, before the one more iteration; default 0)}
"""
import json
import os
import sys

import numpy as np
import tensorflow as tf

try:
    import keras
except ImportError:
    keras = tf.keras


def sample_id(x):
    # make_folder's colour (c * 40, i * 30, 7) -> "c<c>/<i>.png"
    return "c%d/%d.png" % (int(round(float(x[..., 0].mean()))) // 40,
                           int(round(float(x[..., 1].mean()))) // 30)


def pipeline(data, cfg, seed, log=None):
    ds0 = tf.keras.utils.image_dataset_from_directory(data, batch_size=1, image_size=(4, 4),
                                                      seed=seed)
    ds = ds0
    if cfg.get("shard"):
        ds = ds.shard(*cfg["shard"])
    ds = ds.batch(cfg.get("batch", 3)).map(lambda x, y: (tf.squeeze(x, 1), tf.squeeze(y, 1)))
    if log is not None:
        def record(x, y):
            log.append([sample_id(xi) for xi in x.numpy()])
            return x, y

        ds = ds.map(lambda x, y: tf.py_function(record, [x, y], [x.dtype, y.dtype]))
        ds = ds.map(lambda x, y: (tf.ensure_shape(x, [None, 4, 4, 3]), tf.ensure_shape(y, [None])))
    return ds0, ds


def order(ds):
    return [sample_id(xi) for x, _ in ds for xi in x.numpy()]


def main():
    data, out, cfg = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    if cfg.get("numpy_seed") is not None:
        np.random.seed(cfg["numpy_seed"])
    if cfg.get("global_seed") is not None:
        tf.random.set_seed(cfg["global_seed"])
    log = []
    ds0, ds = pipeline(data, cfg, cfg.get("seed"), log)
    model = tf.keras.Sequential([
        tf.keras.Input(shape=(4, 4, 3)),
        tf.keras.layers.GlobalAveragePooling2D(),
        tf.keras.layers.Dense(len(ds0.class_names)),
    ])
    model.compile(optimizer=tf.keras.optimizers.SGD(learning_rate=0.01),
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    if cfg.get("loop"):
        for _ in range(cfg.get("epochs", 3)):
            for _ in ds:
                pass
    else:
        model.fit(ds, epochs=cfg.get("epochs", 3), steps_per_epoch=cfg.get("steps_per_epoch"),
                  verbose=0)
    fit_log = list(log)
    for _ in range(cfg.get("unread", 0)):
        it = iter(ds)
        del it
    del log[:]
    after = [i for b in (list(ds) and log) for i in b]
    ref = []
    if cfg.get("ref"):
        _, rds = pipeline(cfg["ref"], cfg, cfg.get("ref_seed", cfg.get("seed")))
        ref = [order(rds) for _ in range(cfg.get("ref_iters", 8))]
    fns = {"keras.utils": keras.utils.image_dataset_from_directory,
           "tf.keras.utils": tf.keras.utils.image_dataset_from_directory}
    result = {"pid": os.getpid(), "keras": keras.__version__,
              "file_paths": [os.path.relpath(p, data) for p in ds0.file_paths],
              "fit": fit_log, "after": after, "ref": ref,
              "wrapped": {k: hasattr(f, "__wrapped__") for k, f in fns.items()}}
    with open(out, "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main()
