"""Tests of the order reporter's Keras side against the real Keras of both lines: fit over
ImageDataGenerator.flow_from_directory (clairfs_report/keras_hooks.py, class Keras; over a
Sequence of the job's own: keras_custom_test.py), over
image_dataset_from_directory (clairfs_report/idfd_hooks.py, class Idfd), and tf.data's
list_files pipelines in a loop and under fit (clairfs_report/lf_hooks.py, class ListFiles; the
reported settings are also given to clairfs-order, when built, whose order must be TF's).

usage: keras_test.py VENV_PYTHON [...]   (one per Keras line; run by keras_report_test.sh)
Jobs (keras_job.py) run with the venv's python and PYTHONPATH=scripts/report, so the reporter
loads through sitecustomize as in a job; a FakeDaemon stands in for clairfsd.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.environ.get("CLAIRFS_SRC") or os.path.dirname(os.path.dirname(HERE))
REPORT_DIR = os.path.join(SRC, "scripts", "report")
JOB = os.path.join(HERE, "keras_job.py")
IDFD_JOB = os.path.join(HERE, "idfd_job.py")
LF_JOB = os.path.join(HERE, "lf_job.py")
sys.path.insert(0, HERE)

from fake_daemon import FakeDaemon  # noqa: E402
from report_test import CLASSES, PER_CLASS, make_folder  # noqa: E402

PYTHONS = []      # the venvs' pythons, from the command line
BATCH, LEN = 4, 6  # 21 samples in batches of 4


class Jobs(unittest.TestCase):
    """Runs jobs in the venvs, with the data under the fake mount (the test's tmp)."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="clairfs-report-keras.")
        cls.data = os.path.join(cls.tmp, "data")
        make_folder(cls.data)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def job(self, py, cfg, daemon=None, report=True, script=JOB, data=None):
        out = os.path.join(self.tmp, "out-%s.json" % os.urandom(4).hex())
        env = {k: v for k, v in os.environ.items() if not k.startswith("CLAIRFS_REPORT")}
        env.update(PYTHONPATH=REPORT_DIR, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="",
                   PYTHONWARNINGS="ignore")
        if daemon is not None:
            env.update(CLAIRFS_REPORT_SOCKET=daemon.name, CLAIRFS_REPORT_ROOT=self.tmp)
        if not report:
            env["CLAIRFS_REPORT"] = "0"
        p = subprocess.run([py, script, data or self.data, out, json.dumps(cfg)], env=env,
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(out) as f:
            result = json.load(f)
        result["stderr"] = "\n".join(l for l in p.stderr.splitlines() if "clairfs" in l)
        if daemon is not None:
            daemon.wait_idle()
        return result

    def keras3(self, py):
        return "tf-keras2" not in py


class Keras(Jobs):
    def check(self, py, steps, epochs=3, per_execution=1):
        """The reported orders are the batches each epoch of fit trained on, as loaded."""
        d = FakeDaemon()
        try:
            r = self.job(py, {"steps": steps, "epochs": epochs, "batch": BATCH, "seed": 3,
                              "per_execution": per_execution}, d)
        finally:
            d.close()
        self.assertEqual((d.errors, d.more_segments), ([], 0))  # one segment per epoch
        self.assertEqual(r["stderr"], "")
        self.assertEqual(r["len"], LEN)
        pid = r["pid"]
        got = {e: (t, idx) for (p, t, s, e), idx in d.orders.items() if p == pid}
        self.assertEqual({s for (p, t, s, e) in d.orders}, {1})
        # The table: the iterator's files, relative to the mount, in its own order.
        tables = {t for t, _ in got.values()}
        self.assertEqual(len(tables), 1)
        self.assertEqual(d.paths[tables.pop()], ["data/" + p for p in r["filepaths"]])
        self.assertEqual(d.loaders, {(pid, 1): {"batch_size": BATCH, "num_workers": 0,
                                                "prefetch_factor": 1}})
        self.assertEqual([h["framework"] for h in d.hellos], ["keras"])
        # Loads per pass of fit's generator (the peek that builds the model is no pass).
        passes = {}
        for tag, idx in r["loads"]:
            if tag is not None:
                passes.setdefault(tag, []).append(idx)
        s = min(steps or LEN, LEN)
        if self.keras3(py):
            s = min(-(-s // per_execution) * per_execution, LEN)  # whole executions a step
        # Keras 3: one pass serves ceil(LEN / s) epochs, each reported as it begins, with
        # the batches the pass reads on from there (the last epoch of a pass reads what is
        # left). tf.keras 2: a new pass every epoch.
        per_pass = -(-LEN // s) if self.keras3(py) else 1
        self.assertEqual(sorted(got), list(range(epochs)))
        self.assertGreaterEqual(len(passes), -(-epochs // per_pass))
        for e in range(epochs):
            n, k = divmod(e, per_pass)
            loaded = [i for b in passes[n][k * s:(k + 1) * s] for i in b]
            self.assertEqual(got[e][1], loaded, (py, steps, e))
            if k == 0:  # later epochs of a pass mix two index arrays: a sample may repeat
                self.assertEqual(sorted(loaded), sorted(set(loaded)))
        # A GUESS of each epoch a pass goes on into (the one after fit's last too), sent with
        # the epoch before it: its batches as the array in place then slices them (what
        # tf.data reads ahead before on_epoch_end draws the next).
        guesses = {e: idx for (p, t, s, e), idx in d.guesses.items() if p == pid}
        if self.keras3(py):
            self.assertEqual(sorted(guesses), [e for e in range(1, epochs + 1) if e % per_pass])
            for e, idx in guesses.items():
                if e < epochs:
                    self.assertEqual(len(idx), len(got[e][1]), (py, steps, e))
        else:
            # tf.keras 2: each epoch after the first (and one after fit's last), foreseen at
            # the on_epoch_end before it: its index_array, and its batch order drawn from a
            # copy of `random`'s state; the same order fit then drew.
            self.assertEqual(sorted(guesses), list(range(1, epochs + 1)))
            for e in range(1, epochs):
                self.assertEqual(guesses[e], got[e][1], (py, steps, e))
        return r

    def test_orders_full_epochs(self):
        for py in PYTHONS:
            with self.subTest(py=py):
                self.check(py, None)

    def test_orders_fewer_steps(self):
        # Keras 3: passes of 2 and of 3 epochs, the last of each pass shorter or not.
        for py in PYTHONS:
            for steps, epochs, per_execution in ((4, 4, 1), (2, 5, 1), (3, 3, 2)):
                with self.subTest(py=py, steps=steps, per_execution=per_execution):
                    self.check(py, steps, epochs, per_execution)

    def test_orders_enqueued(self):
        # tf.keras 2's fit(workers=2): an OrderedEnqueuer per epoch draws the order in its
        # thread and 2 pool threads load the batches, out of order and up to 10 ahead (the
        # queue). When fit stops it the pool still loads what was queued: up to 10 + 2
        # batches past the epoch's steps, reported with the epoch. Here steps 4 + 12 covers
        # the pass of 6: each epoch's report is the whole pass, its first 4 batches loaded
        # by the epoch's enqueuer.
        for py in PYTHONS:
            if self.keras3(py):
                continue  # Keras 3's fit has no workers
            with self.subTest(py=py):
                d = FakeDaemon()
                try:
                    r = self.job(py, {"steps": 4, "epochs": 3, "batch": BATCH, "seed": 3,
                                      "workers": 2}, d)
                finally:
                    d.close()
                self.assertEqual((d.errors, r["stderr"]), ([], ""))
                pid = r["pid"]
                got = {e: idx for (p, t, s, e), idx in d.orders.items() if p == pid}
                self.assertEqual(sorted(got), [0, 1, 2])
                self.assertEqual(d.loaders, {(pid, 1): {"batch_size": BATCH, "num_workers": 2,
                                                        "prefetch_factor": 5}})
                passes = {}
                for tag, idx in r["loads"]:
                    if tag is not None:
                        passes.setdefault(tag, []).append(tuple(idx))
                self.assertEqual(len(passes), 3)
                n = len(r["filepaths"])
                # Each next epoch foreseen at the on_epoch_end before it, exactly.
                guesses = {e: idx for (p, t, s, e), idx in d.guesses.items() if p == pid}
                self.assertEqual(sorted(guesses), [1, 2, 3])
                self.assertEqual([guesses[e] for e in (1, 2)], [got[1], got[2]])
                for e in range(3):
                    self.assertEqual(sorted(got[e]), list(range(n)), (py, e))
                    # Its first 4 batches (one index array per pass: a batch is known by
                    # its first sample; the short one may be any) were loaded.
                    order, by_first, batches = got[e], {b[0]: b for b in passes[e]}, []
                    while len(batches) < 4:
                        b = by_first.get(order[0], ())
                        self.assertTrue(b, (py, e, order))
                        self.assertEqual(tuple(order[:len(b)]), b, (py, e, order))
                        batches.append(b)
                        order = order[len(b):]

    def test_orders_enqueued_validation(self):
        # tf.keras 2's fit(workers=2, validation_data=another iterator, validation_steps=9)
        # over 6 batches: each evaluation's enqueuer reads a whole pass (unshuffled: batch b
        # is index_array[b*4:(b+1)*4]), on_epoch_end redraws index_array, and it reads 3 more
        # batches of a second pass. Both passes are reported as the validation's epoch, the
        # second as more of it (the 12 batches its queue may read past the steps cover it);
        # the next evaluation's first pass is guessed before it begins.
        for py in PYTHONS:
            if self.keras3(py):
                continue  # Keras 3's fit has no workers
            with self.subTest(py=py):
                d = FakeDaemon()
                try:
                    r = self.job(py, {"steps": 4, "epochs": 2, "batch": BATCH, "seed": 3,
                                      "workers": 2, "val_steps": 9}, d)
                finally:
                    d.close()
                self.assertEqual((d.errors, r["stderr"]), ([], ""))
                pid, n = r["pid"], len(r["filepaths"])
                streams = {}
                for (p, t, s, e), idx in d.orders.items():
                    if p == pid:
                        streams.setdefault(s, {})[e] = idx
                self.assertEqual(len(streams), 2)
                val = streams[max(streams)]  # numbered as first read: training's is first
                self.assertEqual(sorted(val), [0, 1])
                self.assertEqual(d.more_segments, 2)  # one per evaluation
                # Each evaluation's enqueuer (one tag, in order) loads its first pass's
                # n / BATCH batches, then, after on_epoch_end drew a new index_array, the
                # second pass's: the report must name the batches of the pass that reads them.
                evaluations = {}
                for tag, idx in r["val_loads"]:
                    if tag is not None:
                        evaluations.setdefault(tag, []).append(tuple(idx))
                self.assertEqual(len(evaluations), len(val))
                per_pass = n // BATCH
                for (e, order), loads in zip(sorted(val.items()), evaluations.values()):
                    first, second = order[:n], order[n:]
                    self.assertEqual((sorted(first), sorted(second)), (list(range(n)),) * 2)
                    batches = [tuple(o[b * BATCH:(b + 1) * BATCH]) for o in (first, second)
                               for b in range(per_pass)]
                    self.assertEqual(set(batches[:per_pass]), set(loads[:per_pass]), (py, e))
                    for b in batches[per_pass:per_pass + 3]:
                        self.assertIn(b, loads[per_pass:], (py, e, order, loads))
                # The validation does not shuffle: its epoch 1's first pass was known when
                # epoch 0 ended, and guessed after training's epoch 1 was reported. Training's
                # epochs 1 and 2 were guessed as the epoch before them ended.
                guesses = {(s, e): idx for (p, t, s, e), idx in d.guesses.items() if p == pid}
                train = streams[min(streams)]
                self.assertEqual(sorted(guesses), [(min(streams), 1), (min(streams), 2),
                                                   (max(streams), 1)])
                self.assertEqual(guesses[(max(streams), 1)], val[1][:n])
                self.assertEqual(guesses[(min(streams), 1)], train[1])

    def test_same_results(self):
        # With steps_per_epoch = len the job is deterministic; the reporter changes nothing.
        # (Below len it is not, reporter or not: the generator's read-ahead past the epoch
        # moves the iterator's seeds, see docs/report.md.)
        cfg = {"steps": None, "epochs": 3, "batch": BATCH, "seed": 5}
        for py in PYTHONS:
            with self.subTest(py=py):
                d = FakeDaemon()
                try:
                    on = self.job(py, cfg, d)
                    self.assertTrue(d.orders)
                finally:
                    d.close()
                d = FakeDaemon()
                try:
                    off = self.job(py, cfg, d, report=False)
                    self.assertEqual((d.hellos, d.frames), ([], 0))  # nothing connected
                finally:
                    d.close()
                for k in ("loads", "loss", "weights"):
                    self.assertEqual(on[k], off[k], k)

    def test_daemon_gone(self):
        cfg = {"steps": None, "epochs": 3, "batch": BATCH, "seed": 9}
        for py in PYTHONS:
            with self.subTest(py=py):
                d = FakeDaemon(close_after_orders=1)
                try:
                    got = self.job(py, cfg, d)
                finally:
                    d.close()
                off = self.job(py, cfg, None, report=False)
                for k in ("loads", "loss", "weights"):
                    self.assertEqual(got[k], off[k], k)
                lines = got["stderr"].splitlines()
                self.assertEqual(len(lines), 1, got["stderr"])
                self.assertTrue(lines[0].startswith("clairfs-report: disabled: "), lines[0])

    def test_lazy(self):
        # Keras imported: its adapters patched; before that, nothing of the hooks loaded.
        code = ("import sys; a = 'clairfs_report.keras_hooks' in sys.modules;"
                " import tensorflow as tf; m = tf.keras.Sequential;"
                " print(a, 'clairfs_report.keras_hooks' in sys.modules,"
                " 'clairfs_report.torch_hooks' in sys.modules)")
        for py in PYTHONS:
            with self.subTest(py=py):
                env = dict(os.environ, PYTHONPATH=REPORT_DIR, TF_CPP_MIN_LOG_LEVEL="2")
                env.pop("CLAIRFS_REPORT", None)
                p = subprocess.run([py, "-c", code], env=env, capture_output=True, text=True,
                                   timeout=120)
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertEqual(p.stdout.split(), ["False", "True", "False"])


class Idfd(Jobs):
    """image_dataset_from_directory(DATA, batch_size=1, seed=...).shard(2, r).batch(B), fit.

    The data is under the fake mount (the test's tmp); a copy off the mount (`ref`) serves as
    the reference: the same pipeline built afresh there, iterated again and again, gives the
    order of each iteration number (and is not reported: it is on no mount).
    """

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.ref_tmp = tempfile.mkdtemp(prefix="clairfs-report-idfd-ref.")
        cls.ref = os.path.join(cls.ref_tmp, "data")
        make_folder(cls.ref)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.ref_tmp, ignore_errors=True)
        super().tearDownClass()

    def idfd(self, py, cfg, report=True, data=None):
        d = FakeDaemon()
        try:
            r = self.job(py, cfg, d, report=report, script=IDFD_JOB, data=data)
        finally:
            d.close()
        self.assertEqual(d.errors, [])
        self.assertEqual(r["stderr"], "")
        return r, d

    def test_idfd_seeded_shard(self):
        # (a) seed given, .shard(2, r).batch(3), tf.random.set_seed: one stream, its SETTINGS,
        # an EPOCH per iterator fit made, numbered as the dataset's iterations.
        epochs, batch = 3, 3
        for py in PYTHONS:
            for rank in (0, 1):
                with self.subTest(py=py, rank=rank):
                    cfg = {"seed": 1234, "global_seed": 77, "shard": [2, rank], "batch": batch,
                           "epochs": epochs, "ref": self.ref, "ref_iters": 2 * epochs + 2}
                    r, d = self.idfd(py, cfg)
                    self.assertEqual(r["wrapped"], {"keras.utils": True, "tf.keras.utils": True})
                    pid = r["pid"]
                    self.assertEqual([h["framework"] for h in d.hellos], ["keras"])
                    self.assertEqual(list(d.settings), [(pid, 1)])  # the reference: none
                    self.assertEqual(d.settings[(pid, 1)], {
                        "sampler": "keras", "root": "data", "rank": str(rank),
                        "world_size": "2", "seed": "1234", "global-seed": "77",
                        "keras-version": r["keras"], "batch-size": "1", "labels": "inferred"})
                    # fit's iterator creations (docs/report.md): tf.keras 2 one before the
                    # epochs (never read) and one per epoch; Keras 3 two per epoch (the second
                    # made at the epoch's end, dropped unread). Only those read are reported.
                    reads = ([2 * e for e in range(epochs)] if self.keras3(py)
                             else [e + 1 for e in range(epochs)])
                    made = 2 * epochs if self.keras3(py) else epochs + 1
                    self.check_reads(r, d, batch, reads, made)

    def check_reads(self, r, d, batch, reads, after):
        """EPOCH frames for exactly the iterations `reads` then `after` (the job's one more),
        each number's order that of a fresh pipeline's iteration of that number (ref): fit's
        log read iteration by iteration, the one more iteration."""
        got = d.epochs[(r["pid"], 1)]
        self.assertEqual(got, reads + [after])
        ref = r["ref"]
        self.assertGreater(len(ref), after)
        self.assertEqual(len({tuple(o) for o in ref}), len(ref))  # all distinct
        self.assertEqual(r["after"], ref[after])
        per_iter = -(-len(r["after"]) // batch)
        self.assertEqual(len(r["fit"]), len(reads) * per_iter)
        for i, k in enumerate(reads):
            seen = [s for b in r["fit"][i * per_iter:(i + 1) * per_iter] for s in b]
            self.assertEqual(seen, ref[k], (i, k))

    def test_idfd_steps_per_epoch(self):
        # fit with steps_per_epoch = half the batches: one iterator is read over 2 epochs.
        # Keras 3 (4 epochs): made 0 (read, epochs 0-1), 1 (read, 2-3), 2 (at the end, unread);
        # tf.keras 2 (2 epochs; steps != the cardinality: no iterator made again): 0 only.
        batch = 3  # rank 0's 11 samples: 4 batches
        for py in PYTHONS:
            with self.subTest(py=py):
                epochs = 4 if self.keras3(py) else 2
                cfg = {"seed": 99, "shard": [2, 0], "batch": batch, "epochs": epochs,
                       "steps_per_epoch": 2, "ref": self.ref, "ref_iters": 5}
                r, d = self.idfd(py, cfg)
                if self.keras3(py):
                    self.check_reads(r, d, batch, [0, 1], 3)
                else:
                    self.check_reads(r, d, batch, [0], 1)

    def test_idfd_loop_unread(self):
        # A plain `for x in ds` twice, then two iterators made and never read, then one more
        # iteration: EPOCH 0, 1 (at each loop's first element), nothing for 2 and 3, then 4.
        batch = 3
        for py in PYTHONS:
            with self.subTest(py=py):
                cfg = {"seed": 5, "shard": [2, 1], "batch": batch, "epochs": 2, "loop": True,
                       "unread": 2, "ref": self.ref, "ref_iters": 5}
                r, d = self.idfd(py, cfg)
                self.check_reads(r, d, batch, [0, 1], 4)

    def test_idfd_unseeded(self):
        # (b) seed=None: the reported seed is the one Keras drew, and the reporter changes
        # nothing (the same files in the same batches with CLAIRFS_REPORT=0).
        cfg = {"seed": None, "numpy_seed": 5, "batch": 4, "epochs": 2}
        for py in PYTHONS:
            with self.subTest(py=py):
                on, d = self.idfd(py, cfg)
                fields = d.settings[(on["pid"], 1)]
                self.assertNotIn("global-seed", fields)
                self.assertEqual((fields["rank"], fields["world_size"]), ("0", "1"))
                seed = int(fields["seed"])
                self.assertEqual(d.epochs[(on["pid"], 1)],
                                 [0, 2, 4] if self.keras3(py) else [1, 2, 3])
                off, d = self.idfd(py, cfg, report=False)
                self.assertEqual((d.hellos, d.frames), ([], 0))
                for k in ("file_paths", "fit", "after"):
                    self.assertEqual(on[k], off[k], k)
                given, _ = self.idfd(py, dict(cfg, seed=seed), report=False)
                for k in ("file_paths", "fit", "after"):
                    self.assertEqual(on[k], given[k], k)
                self.assertNotEqual(on["file_paths"], sorted(on["file_paths"]))

    def test_idfd_off_mount(self):
        # (c) a directory on no clairfs mount: nothing connects.
        cfg = {"seed": 3, "shard": [2, 0], "batch": 3, "epochs": 2}
        for py in PYTHONS:
            with self.subTest(py=py):
                r, d = self.idfd(py, cfg, data=self.ref)
                self.assertEqual(r["wrapped"], {"keras.utils": True, "tf.keras.utils": True})
                self.assertEqual((d.hellos, d.frames), ([], 0))


def clairfs_order():
    """The built clairfs-order (CLAIRFS_ORDER, or build/bin/ of the checkout), or None."""
    for p in (os.environ.get("CLAIRFS_ORDER"), os.path.join(SRC, "build", "bin", "clairfs-order")):
        if p and os.access(p, os.X_OK):
            return p
    return None


def model_order(root, fields, epoch):
    """clairfs-order's order of iteration `epoch` for SETTINGS `fields` (the daemon's model:
    ModelOfSettings drives tf-list-files with the loop driver)."""
    args = [clairfs_order(), "--root", os.path.join(root, fields["root"]), "--epoch", str(epoch)]
    for k, v in fields.items():
        if k in ("root", "world_size"):
            continue  # world_size: the job's processes (tf-list-files shards by `shard`)
        args += ["--" + k] + ([] if v == "1" and k.startswith(("no-", "shard-before",
                                                               "repeat-before")) else [v])
    p = subprocess.run(args, capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        raise AssertionError("%s: %s" % (" ".join(args), p.stderr))
    return p.stdout.splitlines()


class ListFiles(Jobs):
    """tf.data.Dataset.list_files(DATA/*/*.png, ...) + stages, in a loop or under fit. The
    copy off the mount (`ref`) gives each iteration number's order, and is not reported."""

    GLOB = "*/*.png"

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.ref_tmp = tempfile.mkdtemp(prefix="clairfs-report-lf-ref.")
        cls.ref = os.path.join(cls.ref_tmp, "data")
        make_folder(cls.ref)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.ref_tmp, ignore_errors=True)
        super().tearDownClass()

    def lf(self, py, cfg, report=True, data=None):
        d = FakeDaemon()
        try:
            r = self.job(py, cfg, d, report=report, script=LF_JOB, data=data)
        finally:
            d.close()
        self.assertEqual(d.errors, [])
        self.assertEqual(r["stderr"], "")
        return r, d

    def check_model(self, fields, orders):
        """clairfs-order, given the reported settings, prints TF's order for each iteration
        number k in `orders` ({k: [file, ...]})."""
        if clairfs_order() is None:
            if os.environ.get("CI") == "true":
                self.fail("clairfs-order not built (CLAIRFS_ORDER): the model's orders not compared")
            print("clairfs-order not built: the model's orders not compared", file=sys.stderr)
            return
        for k, want in orders.items():
            self.assertEqual(model_order(self.tmp, fields, k), want, "iteration %d" % k)

    def test_lf_seeded_shard_loop(self):
        # (a) list_files(seed=S).shard(2, r), a plain loop 3 times: EPOCH 0, 1, 2.
        for py in PYTHONS:
            for rank in (0, 1):
                with self.subTest(py=py, rank=rank):
                    cfg = {"seed": 4321, "stages": [["shard", 2, rank], ["map"]], "epochs": 3,
                           "ref": self.ref, "ref_iters": 3}
                    r, d = self.lf(py, cfg)
                    self.assertTrue(r["wrapped"])
                    pid = r["pid"]
                    self.assertEqual([h["framework"] for h in d.hellos], ["tensorflow"])
                    self.assertEqual(list(d.settings), [(pid, 1)])
                    fields = d.settings[(pid, 1)]
                    self.assertEqual(fields, {
                        "sampler": "tf-list-files", "root": "data", "rank": str(rank),
                        "world_size": "2", "glob": self.GLOB, "shard": "2", "seed": "4321"})
                    self.assertEqual(d.epochs[(pid, 1)], [0, 1, 2])
                    self.assertEqual(r["iters"], r["ref"])
                    self.assertEqual(len({tuple(o) for o in r["iters"]}), 3)
                    self.check_model(fields, dict(enumerate(r["iters"])))

    def test_lf_seeded_shard_fit(self):
        # (a) through fit, 3 epochs, tf.random.set_seed(G) too: EPOCH of the iterators fit read
        # (tf.keras 2: 1, 2, 3; Keras 3: 0, 2, 4), then the job's one more iteration.
        epochs, batch = 3, 4
        for py in PYTHONS:
            for rank in (0, 1):
                with self.subTest(py=py, rank=rank):
                    cfg = {"seed": 99, "global_seed": 77, "stages": [["shard", 2, rank]],
                           "epochs": epochs, "fit": True, "batch": batch, "ref": self.ref,
                           "ref_iters": 2 * epochs + 1}
                    r, d = self.lf(py, cfg)
                    pid = r["pid"]
                    fields = d.settings[(pid, 1)]
                    self.assertEqual(fields, {
                        "sampler": "tf-list-files", "root": "data", "rank": str(rank),
                        "world_size": "2", "glob": self.GLOB, "shard": "2", "seed": "99",
                        "global-seed": "77"})
                    reads = ([2 * e for e in range(epochs)] if r["keras3"]
                             else [e + 1 for e in range(epochs)])
                    after = 2 * epochs if r["keras3"] else epochs + 1
                    self.assertEqual(d.epochs[(pid, 1)], reads + [after])
                    per = -(-len(r["iters"][0]) // batch)
                    self.assertEqual(len(r["fit"]), epochs * per)
                    seen = {}
                    for i, k in enumerate(reads):
                        seen[k] = [f for b in r["fit"][i * per:(i + 1) * per] for f in b]
                        self.assertEqual(seen[k], r["ref"][k], k)
                    seen[after] = r["iters"][0]
                    self.assertEqual(seen[after], r["ref"][after])
                    self.check_model(fields, seen)

    def test_lf_global_seed(self):
        # (b) tf.random.set_seed(G), list_files without seed: the reported seed is the op seed
        # TF drew (the context's first draw), and list_files(seed=reported) gives the same
        # orders under the same global seed.
        import random
        for py in PYTHONS:
            with self.subTest(py=py):
                cfg = {"seed": None, "global_seed": 11, "stages": [["shard", 3, 2]], "epochs": 3}
                r, d = self.lf(py, cfg)
                fields = d.settings[(r["pid"], 1)]
                self.assertEqual(fields["global-seed"], "11")
                seed = int(fields["seed"])
                self.assertEqual(seed, random.Random(11).randint(0, 2 ** 31 - 1))
                given, d2 = self.lf(py, dict(cfg, seed=seed), report=False)
                self.assertEqual((d2.hellos, d2.frames), ([], 0))
                self.assertEqual(r["iters"], given["iters"])
                self.assertEqual(d.epochs[(r["pid"], 1)], [0, 1, 2])
                self.check_model(fields, dict(enumerate(r["iters"])))

    def test_lf_unseeded(self):
        # (c) no seed and no global seed, in list_files or in the pipeline's shuffle over it:
        # TF would seed at random, unknowably. The reporter passes a seed from os.urandom in
        # its place and reports it: the orders are exactly those the same pipeline given that
        # seed draws (without the reporter), and the model's; each run draws another seed.
        cases = [({"stages": [["shard", 2, 0]]}, lambda c, s: dict(c, seed=s)),
                 ({"shuffle": False, "stages": [["shuffle", 6, None, True], ["shard", 2, 1]]},
                  lambda c, s: dict(c, stages=[["shuffle", 6, s, True], ["shard", 2, 1]]))]
        for py in PYTHONS:
            for cfg, seeded in cases:
                with self.subTest(py=py, cfg=cfg):
                    seeds = []
                    for run in range(2):
                        r, d = self.lf(py, dict(cfg, epochs=3))
                        self.assertTrue(r["wrapped"])
                        fields = d.settings[(r["pid"], 1)]
                        self.assertNotIn("global-seed", fields)
                        seeds.append(int(fields["seed"]))
                        self.assertEqual(d.epochs[(r["pid"], 1)], [0, 1, 2])
                        self.assertEqual(len({tuple(o) for o in r["iters"]}), 3)
                        if run == 0:
                            given, d2 = self.lf(py, dict(seeded(cfg, seeds[0]), epochs=3),
                                                report=False)
                            self.assertEqual((d2.hellos, d2.frames), ([], 0))
                            self.assertEqual(r["iters"], given["iters"])
                            self.check_model(fields, dict(enumerate(r["iters"])))
                    self.assertNotEqual(seeds[0], seeds[1])

    def test_lf_same_results(self):
        # (d) the same files in the same order every iteration with CLAIRFS_REPORT=0.
        cfg = {"seed": 7, "stages": [["shard", 2, 1], ["prefetch", 2]], "epochs": 3}
        for py in PYTHONS:
            with self.subTest(py=py):
                on, d = self.lf(py, cfg)
                self.assertEqual(d.epochs[(on["pid"], 1)], [0, 1, 2])
                off, d = self.lf(py, cfg, report=False)
                self.assertEqual((d.hellos, d.frames), ([], 0))
                self.assertFalse(off["wrapped"])
                self.assertEqual(on["iters"], off["iters"])

    def test_lf_off_mount(self):
        # (e) a pattern on no clairfs mount: nothing connects.
        for py in PYTHONS:
            with self.subTest(py=py):
                r, d = self.lf(py, {"seed": 3, "epochs": 2}, data=self.ref)
                self.assertTrue(r["wrapped"])
                self.assertEqual((d.hellos, d.frames), ([], 0))

    def test_lf_pipeline_shuffle(self):
        # list_files(shuffle=False) then the pipeline's own shard / shuffle / repeat: mapped to
        # the model's settings; what the model cannot express (take) is not reported.
        cases = [
            ([["shard", 2, 1], ["shuffle", 5, 9, True], ["repeat", 2]],
             {"buffer-size": "5", "shard-before-shuffle": "1", "repeat": "2"}),
            ([["shuffle", 8, 9, False], ["shard", 2, 0], ["map"], ["repeat", 2]],
             {"buffer-size": "8", "no-reshuffle": "1", "repeat": "2"}),
            ([["shuffle", 6, 5, True], ["map2"], ["repeat", 2]],
             {"buffer-size": "6", "repeat": "2", "no-repeat-fusion": "1"}),
            ([["shuffle", 6, 5, True], ["map"], ["prefetch", 1], ["repeat", 2]],
             {"buffer-size": "6", "repeat": "2", "no-repeat-fusion": "1"}),
            ([["repeat", 2], ["shuffle", 10, 3, True]],
             {"buffer-size": "10", "repeat": "2", "repeat-before-shuffle": "1"}),
        ]
        for py in PYTHONS:
            for stages, want in cases:
                with self.subTest(py=py, stages=stages):
                    cfg = {"shuffle": False, "stages": stages, "epochs": 3, "ref": self.ref,
                           "ref_iters": 3}
                    r, d = self.lf(py, cfg)
                    fields = d.settings[(r["pid"], 1)]
                    shuffle = [s for s in stages if s[0] == "shuffle"][0]
                    self.assertEqual(fields["seed"], str(shuffle[2]))
                    for k, v in want.items():
                        self.assertEqual(fields.get(k), v, k)
                    self.assertEqual(r["iters"], r["ref"])
                    self.assertEqual(d.epochs[(r["pid"], 1)], [0, 1, 2])
                    self.check_model(fields, dict(enumerate(r["iters"])))
            # take changes the files read; an identity map between a shuffle and a repeat
            # may be dropped by grappler (then the two fuse): neither is reported.
            for stages in ([["take", 5]], [["map"], ["repeat", 2]]):
                with self.subTest(py=py, stages=stages):
                    r, d = self.lf(py, {"seed": 1, "stages": stages, "epochs": 2})
                    self.assertEqual((d.hellos, d.frames), ([], 0))


if __name__ == "__main__":
    PYTHONS[:] = [a for a in sys.argv[1:] if not a.startswith("-")]
    unittest.main(argv=[sys.argv[0]] + [a for a in sys.argv[1:] if a.startswith("-")])
