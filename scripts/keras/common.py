"""What the two Keras training scripts share: the ranks (Horovod when it is
installed, else the MPI launcher's environment), a small CNN, the per-epoch
report and the optional per-sample log. Nothing here knows of clairfs.
"""
import hashlib
import json
import os
import time

import tensorflow as tf

try:  # Horovod 0.28 works with Keras 2 only (tensorflow <= 2.15)
    import horovod.tensorflow.keras as hvd
except ImportError:
    hvd = None


def init_ranks():
    """(rank, size): from Horovod after hvd.init(), or, on the Keras 3 line
    where Horovod does not run, from the launcher's environment (MPICH's
    hydra, Open MPI, Slurm); each rank then trains on its own shard without
    averaging gradients."""
    if hvd is not None:
        hvd.init()
        return hvd.rank(), hvd.size()
    for rank_var, size_var in (("PMI_RANK", "PMI_SIZE"),
                               ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
                               ("SLURM_PROCID", "SLURM_NTASKS")):
        if rank_var in os.environ and size_var in os.environ:
            return int(os.environ[rank_var]), int(os.environ[size_var])
    return 0, 1


def start(args):
    """(rank, size) after the common start-up: the ranks, and with
    --deterministic the seeds (Python, NumPy and TensorFlow's global seed) and
    deterministic kernels, so two runs on the same data give the same losses."""
    rank, size = init_ranks()
    if args.deterministic:
        tf.keras.utils.set_random_seed(args.seed)
        tf.config.experimental.enable_op_determinism()
    return rank, size


def small_cnn(image_size, classes):
    layers = tf.keras.layers
    return tf.keras.Sequential([
        tf.keras.Input(shape=(image_size, image_size, 3)),
        layers.Rescaling(1.0 / 255),
        layers.Conv2D(16, 3, padding="same", activation="relu"),
        layers.MaxPooling2D(),
        layers.Conv2D(32, 3, padding="same", activation="relu"),
        layers.MaxPooling2D(),
        layers.Conv2D(64, 3, padding="same", activation="relu"),
        layers.GlobalAveragePooling2D(),
        layers.Dense(classes),
    ])


def compile_model(model, lr, size):
    opt = tf.keras.optimizers.SGD(learning_rate=lr * size, momentum=0.9)
    if hvd is not None:
        opt = hvd.DistributedOptimizer(opt)
    model.compile(optimizer=opt,
                  loss=tf.keras.losses.CategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])


def callbacks(rank, size, checkpoint_dir, report, step_ms=0):
    out = [StepTime(step_ms)] if step_ms > 0 else []
    if hvd is not None:
        out += [hvd.callbacks.BroadcastGlobalVariablesCallback(0),
                hvd.callbacks.MetricAverageCallback()]
    out.append(EpochReport(rank, size, report))
    if rank == 0 and checkpoint_dir:
        os.makedirs(checkpoint_dir, exist_ok=True)
        out.append(tf.keras.callbacks.ModelCheckpoint(
            os.path.join(checkpoint_dir, "epoch-{epoch:02d}.weights.h5"), save_weights_only=True))
    return out


class StepTime(tf.keras.callbacks.Callback):
    """Stands in for a larger model's compute: each training and evaluation step takes `ms`
    longer (a sleep after the step, as an accelerator's step leaves the input pipeline
    running)."""

    def __init__(self, ms):
        super().__init__()
        self.seconds = ms / 1000.0

    def on_train_batch_end(self, batch, logs=None):
        time.sleep(self.seconds)

    def on_test_batch_end(self, batch, logs=None):
        time.sleep(self.seconds)


class EpochReport(tf.keras.callbacks.Callback):
    """Epoch times and losses; rank 0 writes them as JSON at the end."""

    def __init__(self, rank, size, path):
        super().__init__()
        self.rank, self.size, self.path, self.epochs = rank, size, path, []

    def on_epoch_begin(self, epoch, logs=None):
        self.t0 = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        seconds = time.perf_counter() - self.t0
        loss = float((logs or {}).get("loss", float("nan")))
        self.epochs.append({"epoch": epoch, "seconds": seconds, "loss": loss})
        if self.rank == 0:
            print("epoch %d: %.2f s, loss %.6f" % (epoch, seconds, loss), flush=True)

    def on_train_end(self, logs=None):
        if self.rank == 0 and self.path:
            with open(self.path, "w") as f:
                json.dump({"ranks": self.size, "epochs": self.epochs}, f, indent=1)


def blake2b_hex(data):
    return hashlib.blake2b(data, digest_size=8).hexdigest()


class SampleLog:
    """One line per sample the model receives, in the order it receives them:
    a running number and a hash of the sample's bytes (pixels and label)."""

    def __init__(self, path):
        self.f = open(path, "w") if path else None
        self.n = 0

    def add(self, image_bytes, label_bytes):
        if self.f is None:
            return
        h = hashlib.blake2b(image_bytes, digest_size=8)
        h.update(label_bytes)
        self.f.write("%d %s\n" % (self.n, h.hexdigest()))
        self.n += 1

    def close(self):
        if self.f is not None:
            self.f.close()


def add_common_args(ap):
    ap.add_argument("data", help="the dataset directory (one sub-directory per class)")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--image-size", type=int, default=64)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--step-ms", type=float, default=0,
                    help="each training step takes this much longer (a larger model's compute)")
    ap.add_argument("--checkpoint-dir", help="rank 0 saves weights here after every epoch")
    ap.add_argument("--report", help="rank 0 writes epoch times and losses here (JSON)")
    ap.add_argument("--sample-log", help="each rank writes a hash per sample to FILE.rankN")
    ap.add_argument("--deterministic", action="store_true",
                    help="tf.keras.utils.set_random_seed(seed) and deterministic ops, so two "
                         "runs on the same data give the same losses")
