"""A small tf.data job for the reporter's tests: tf.data.Dataset.list_files(DATA/*/*.png) with
the stages asked for, iterated in a plain loop or by Keras fit. list_files yields the paths
themselves, so the job records the files of every iteration (relative to DATA), and, for a
reference directory (a copy off the mount: not reported), the orders of the first iterations
of the same pipeline built afresh (after tf.random.set_seed(G) again, so an unseeded
list_files draws the same op seed).

usage: lf_job.py DATA_DIR OUT.json CONFIG_JSON
CONFIG: {"seed": S or null, "global_seed": G or null, "shuffle": null/true/false,
         "stages": [["shard", n, i], ["shuffle", K, S or null, reshuffle], ["repeat", N],
                    ["take", N], ["map"], ["map2"], ["batch", B], ["prefetch", N]],
         "epochs": E, "fit": false (true: Keras fit for E epochs over the batches),
         "batch": B (fit), "ref": DIR or null, "ref_iters": M}
"""
import json
import os
import sys

import tensorflow as tf


def build(data, cfg):
    ds0 = tf.data.Dataset.list_files(os.path.join(data, "*", "*.png"), shuffle=cfg.get("shuffle"),
                                     seed=cfg.get("seed"))
    ds = ds0
    for st in cfg.get("stages", []):
        if st[0] == "shard":
            ds = ds.shard(st[1], st[2])
        elif st[0] == "shuffle":
            ds = ds.shuffle(st[1], seed=st[2], reshuffle_each_iteration=st[3])
        elif st[0] == "repeat":
            ds = ds.repeat(st[1])
        elif st[0] == "take":
            ds = ds.take(st[1])
        elif st[0] == "map":
            ds = ds.map(lambda f: f)
        elif st[0] == "map2":  # a map grappler keeps (the identity map it removes)
            ds = ds.map(lambda f: tf.strings.regex_replace(f, "^$", "-"))
        elif st[0] == "batch":
            ds = ds.batch(st[1]).unbatch()
        elif st[0] == "prefetch":
            ds = ds.prefetch(st[1])
    return ds0, ds


def names(data, values):
    return [os.path.relpath(v.decode(), data) for v in values]


def main():
    data, out, cfg = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    g = cfg.get("global_seed")
    if g is not None:
        tf.random.set_seed(g)
    _, ds = build(data, cfg)
    iters, fit_log = [], []
    if cfg.get("fit"):
        try:
            import keras
        except ImportError:
            keras = tf.keras

        def record(f):
            fit_log.append(names(data, f.numpy()))
            return f

        fds = ds.batch(cfg.get("batch", 3))
        fds = fds.map(lambda f: tf.py_function(record, [f], tf.string))
        fds = fds.map(lambda f: (tf.ensure_shape(tf.ones([tf.shape(f)[0], 2]), [None, 2]),
                                 tf.ensure_shape(tf.zeros([tf.shape(f)[0]]), [None])))
        model = tf.keras.Sequential([tf.keras.Input(shape=(2,)), tf.keras.layers.Dense(1)])
        model.compile(optimizer=tf.keras.optimizers.SGD(learning_rate=0.01), loss="mse")
        model.fit(fds, epochs=cfg.get("epochs", 3), verbose=0)
        iters.append(names(data, [f.numpy() for f in ds]))  # one more iteration after fit
    else:
        for _ in range(cfg.get("epochs", 3)):
            iters.append(names(data, [f.numpy() for f in ds]))
    ref = []
    if cfg.get("ref"):
        if g is not None:
            tf.random.set_seed(g)
        _, rds = build(cfg["ref"], cfg)
        ref = [names(cfg["ref"], [f.numpy() for f in rds]) for _ in range(cfg.get("ref_iters", 0))]
    result = {"pid": os.getpid(), "iters": iters, "fit": fit_log, "ref": ref,
              "keras3": not tf.__version__.startswith("2.15"),
              "wrapped": hasattr(tf.data.Dataset.list_files, "__wrapped__")}
    with open(out, "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main()
