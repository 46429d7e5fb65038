"""Tests of the order reporter's Keras side (scripts/report/clairfs_report/keras_hooks.py)
against the real Keras of both lines: fit over ImageDataGenerator.flow_from_directory.

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
sys.path.insert(0, HERE)

from fake_daemon import FakeDaemon  # noqa: E402
from report_test import CLASSES, PER_CLASS, make_folder  # noqa: E402

PYTHONS = []      # the venvs' pythons, from the command line
BATCH, LEN = 4, 6  # 21 samples in batches of 4


class Keras(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="clairfs-report-keras.")
        cls.data = os.path.join(cls.tmp, "data")
        make_folder(cls.data)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def job(self, py, cfg, daemon=None, report=True):
        out = os.path.join(self.tmp, "out-%s.json" % os.urandom(4).hex())
        env = {k: v for k, v in os.environ.items() if not k.startswith("CLAIRFS_REPORT")}
        env.update(PYTHONPATH=REPORT_DIR, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="",
                   PYTHONWARNINGS="ignore")
        if daemon is not None:
            env.update(CLAIRFS_REPORT_SOCKET=daemon.name, CLAIRFS_REPORT_ROOT=self.tmp)
        if not report:
            env["CLAIRFS_REPORT"] = "0"
        p = subprocess.run([py, JOB, self.data, out, json.dumps(cfg)], env=env,
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

    def check(self, py, steps, epochs=3):
        """The reported orders are the first `steps` batches each pass of fit's generator loaded."""
        d = FakeDaemon()
        try:
            r = self.job(py, {"steps": steps, "epochs": epochs, "batch": BATCH, "seed": 3}, d)
        finally:
            d.close()
        self.assertEqual(d.errors, [])
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
        s = steps or LEN
        if self.keras3(py) and s < LEN:
            # One pass serves ceil(LEN / s) epochs; only the one that draws it is reported.
            per_pass = -(-LEN // s)
            want_epochs = [e for e in range(epochs) if e % per_pass == 0]
        else:
            want_epochs = list(range(epochs))  # tf.keras 2: a new pass every epoch
        self.assertEqual(sorted(got), want_epochs)
        self.assertGreaterEqual(len(passes), len(want_epochs))
        for n, e in enumerate(want_epochs):
            loaded = [i for b in passes[n][:s] for i in b]
            self.assertEqual(got[e][1], loaded, (py, steps, e))
            self.assertEqual(sorted(loaded), sorted(set(loaded)))
        return r

    def test_orders_full_epochs(self):
        for py in PYTHONS:
            with self.subTest(py=py):
                self.check(py, None)

    def test_orders_fewer_steps(self):
        for py in PYTHONS:
            with self.subTest(py=py):
                self.check(py, 4)

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


if __name__ == "__main__":
    PYTHONS[:] = [a for a in sys.argv[1:] if not a.startswith("-")]
    unittest.main(argv=[sys.argv[0]] + [a for a in sys.argv[1:] if a.startswith("-")])
