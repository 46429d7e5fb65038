"""Tests of the order reporter (scripts/report) against the real torch DataLoader.

Jobs run as subprocesses of /usr/bin/python3 with PYTHONPATH=scripts/report, so the reporter
loads through sitecustomize exactly as in a job; a FakeDaemon stands in for clairfsd
(CLAIRFS_REPORT_SOCKET/CLAIRFS_REPORT_ROOT instead of a mount).
"""
import io
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
JOB = os.path.join(HERE, "report_job.py")
PY = "/usr/bin/python3"
sys.path.insert(0, HERE)
sys.path.insert(0, REPORT_DIR)

from fake_daemon import FakeDaemon  # noqa: E402

CLASSES, PER_CLASS = 3, 7  # 21 samples


def make_folder(root):
    from PIL import Image
    for c in range(CLASSES):
        d = os.path.join(root, "c%d" % c)
        os.makedirs(d)
        for i in range(PER_CLASS):
            Image.new("RGB", (4, 4), (c * 40, i * 30, 7)).save(os.path.join(d, "%d.png" % i))


def flat(epoch_batches):
    return [i for b in epoch_batches for i in b]


class Base(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="clairfs-report-test.")
        cls.data = os.path.join(cls.tmp, "data")
        make_folder(cls.data)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def env(self, daemon=None, **extra):
        env = dict(os.environ)
        for k in list(env):
            if k.startswith("CLAIRFS_REPORT") or k in ("RANK", "WORLD_SIZE"):
                del env[k]
        env["PYTHONPATH"] = REPORT_DIR
        # A spawned worker's semaphore is sometimes reported leaked by multiprocessing's
        # resource tracker at exit, reporter or not: not the job's stderr under test.
        env["PYTHONWARNINGS"] = "ignore::UserWarning:multiprocessing.resource_tracker"
        if daemon is not None:
            env["CLAIRFS_REPORT_SOCKET"] = daemon.name
            env["CLAIRFS_REPORT_ROOT"] = self.tmp
        env.update(extra)
        return env

    def job(self, configs, daemon=None, seed=None, **extra):
        out = os.path.join(self.tmp, "out-%s.json" % os.urandom(4).hex())
        args = [PY, JOB, self.data, out, json.dumps(configs)] + ([str(seed)] if seed is not None
                                                                  else [])
        p = subprocess.run(args, env=self.env(daemon, **extra), capture_output=True, text=True,
                           timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(out) as f:
            result = json.load(f)
        result["stderr"] = p.stderr
        if daemon is not None:
            daemon.wait_idle()
        return result

    def orders_of(self, daemon, pid):
        """{stream: {epoch: (table, indices)}} of one process."""
        got = {}
        for (p, table, stream, epoch), idx in daemon.orders.items():
            if p == pid:
                got.setdefault(stream, {})[epoch] = (table, idx)
        return got


FOLDER_RUNS = [  # the DistributedSampler first: HELLO takes the rank from it
    {"data": "folder", "sampler": "dist", "workers": 2, "ctx": "fork", "epochs": 2},
    {"data": "folder", "sampler": "random", "workers": 0},
    {"data": "folder", "sampler": "seq", "workers": 0, "batch": 5},
    {"data": "folder", "sampler": "random", "workers": 2, "ctx": "spawn"},
    {"data": "folder", "sampler": "dist", "workers": 2, "persistent": True, "epochs": 2},
    {"data": "folder", "sampler": "gen", "workers": 0, "epochs": 2},
]
CUSTOM_RUNS = [
    {"data": "custom", "sampler": "random", "workers": 0, "epochs": 2},
    {"data": "custom", "sampler": "dist", "workers": 2, "ctx": "fork", "epochs": 2},
    {"data": "custom", "sampler": "random", "workers": 2, "ctx": "spawn"},
    {"data": "custom", "sampler": "seq", "workers": 2, "persistent": True, "epochs": 2},
]


class Orders(Base):
    def check_orders(self, daemon, result, runs):
        self.assertEqual((daemon.errors, daemon.more_segments), ([], 0))  # one per epoch
        got = self.orders_of(daemon, result["pid"])
        self.assertEqual(sorted(got), list(range(1, len(runs) + 1)))
        tables = set()
        for n, (cfg, epochs) in enumerate(zip(runs, result["loaders"])):
            self.assertEqual(sorted(got[n + 1]), list(range(len(epochs))), cfg)
            for e, batches in enumerate(epochs):
                table, idx = got[n + 1][e]
                self.assertEqual(idx, flat(batches), (cfg, e))
                tables.add(table)
        return tables

    def test_folder(self):
        d = FakeDaemon()
        try:
            r = self.job(FOLDER_RUNS, d)
            tables = self.check_orders(d, r, FOLDER_RUNS)
            want = sorted("data/c%d/%d.png" % (c, i) for c in range(CLASSES)
                          for i in range(PER_CLASS))
            # distinct DataLoaders over distinct ImageFolder objects: one table each
            self.assertEqual(tables, set(d.paths))
            self.assertEqual(len(tables), len(FOLDER_RUNS))
            for table in tables:
                self.assertEqual(d.paths[table], want)
            self.assertEqual(r["stderr"], "")
            main = [h for h in d.hellos if h["role"] == "main"]
            self.assertEqual(len(main), 1)
            self.assertEqual((main[0]["rank"], main[0]["world_size"]), ("1", "2"))
            self.assertEqual(main[0]["framework"], "torch")
            # Each loader said its shape (LOADER), one stream each in run order.
            shapes = [d.loaders[k] for k in sorted(d.loaders)]
            want_shapes = [{"batch_size": c.get("batch", 4), "num_workers": c["workers"],
                            "prefetch_factor": 2} for c in FOLDER_RUNS]
            self.assertEqual(shapes, want_shapes)
        finally:
            d.close()

    def test_custom_learned(self):
        d = FakeDaemon()
        try:
            r = self.job(CUSTOM_RUNS, d)
            tables = self.check_orders(d, r, CUSTOM_RUNS)
            files = sorted(os.path.relpath(os.path.join(dp, f), self.tmp)
                           for dp, _, fs in os.walk(self.data) for f in fs)
            # Four loaders over four datasets built alike: one table, the key
            # every process computes from the dataset (its ranks share it).
            self.assertEqual(len(tables), 1, tables)
            for table in tables:
                learned = {}
                for key, recs in d.files.items():
                    if key == table or d.aliases.get(key) == table:
                        for index, paths in recs.items():
                            # Datasets built alike share one table (every rank
                            # files into it), so another loader's process may
                            # learn an index again: always the same files.
                            self.assertEqual(learned.setdefault(index, paths), paths)
                        # exactly one file per index, opened twice, reported once
                for index, paths in learned.items():
                    self.assertEqual(paths, [files[index]])
                self.assertTrue(learned, table)
            self.assertEqual((d.errors, d.more_segments), ([], 0))
            roles = sorted(h["role"] for h in d.hellos)
            self.assertIn("worker", roles)
        finally:
            d.close()


class Identity(Base):
    def test_same_results(self):
        runs = [{"data": "folder", "sampler": "gen", "workers": 2, "epochs": 2},
                {"data": "custom", "sampler": "random", "workers": 2, "epochs": 2},
                {"data": "folder", "sampler": "random", "workers": 0, "epochs": 1}]
        d = FakeDaemon()
        try:
            on = self.job(runs, d, seed=5)
            self.assertEqual((d.errors, d.more_segments), ([], 0))
            self.assertEqual(len(self.orders_of(d, on["pid"])), len(runs))
        finally:
            d.close()
        d = FakeDaemon()
        try:
            off = self.job(runs, d, seed=5, CLAIRFS_REPORT="0")
            self.assertEqual((d.hellos, d.frames), ([], 0))  # nothing connected
        finally:
            d.close()
        for k in ("loaders", "noise", "rand"):
            self.assertEqual(on[k], off[k], k)
        self.assertEqual(on["stderr"], "")

    def test_daemon_gone(self):
        runs = [{"data": "folder", "sampler": "random", "workers": 0, "epochs": 3},
                {"data": "folder", "sampler": "random", "workers": 2, "epochs": 2}]
        d = FakeDaemon(close_after_orders=1)
        try:
            got = self.job(runs, d, seed=9)
        finally:
            d.close()
        off = self.job(runs, None, seed=9, CLAIRFS_REPORT="0")
        for k in ("loaders", "noise", "rand"):
            self.assertEqual(got[k], off[k], k)
        lines = got["stderr"].splitlines()
        self.assertEqual(len(lines), 1, got["stderr"])
        self.assertTrue(lines[0].startswith("clairfs-report: disabled: "), lines[0])


class Site(Base):
    def run_py(self, code, **extra):
        p = subprocess.run([PY, "-c", code], env=self.env(**extra), capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        return p.stdout

    def test_no_torch_no_imports(self):
        out = self.run_py("import sys, json; print(json.dumps(sorted(m for m in sys.modules"
                          " if 'clairfs' in m)))")
        self.assertEqual(json.loads(out), ["_clairfs_chained_sitecustomize", "clairfs_report",
                                           "clairfs_report.spare"])

    def test_chains_debian_sitecustomize(self):
        out = self.run_py("import sys; m = sys.modules.get('_clairfs_chained_sitecustomize');"
                          " print(m.__file__ if m else None)")
        debian = "/usr/lib/python3.11/sitecustomize.py"
        if os.path.exists(debian):
            self.assertEqual(out.strip(), debian)

    def test_chains_other_sitecustomize(self):
        other = os.path.join(self.tmp, "other-site")
        os.makedirs(other, exist_ok=True)
        with open(os.path.join(other, "sitecustomize.py"), "w") as f:
            f.write("import os\nos.environ['OTHER_SITE_RAN'] = 'yes'\n")
        out = self.run_py("import os; print(os.environ.get('OTHER_SITE_RAN'))",
                          PYTHONPATH=REPORT_DIR + os.pathsep + other)
        self.assertEqual(out.strip(), "yes")

    def test_spare_open(self):
        # open() of a file on the mount (here the stand-in root) builds the object CPython
        # would (type, buffer, line buffering), without asking isatty; elsewhere io.open.
        code = r"""
import builtins, io, json, os, sys
p = sys.argv[1]
out = {"patched": builtins.open is not io.open, "name": builtins.open.__name__}
for mode in ("rb", "r"):
    a, b = builtins.open(p, mode), io.open(p, mode)
    out[mode] = [type(a) is type(b), a.__sizeof__() == b.__sizeof__(),
                 getattr(a, "line_buffering", None) == getattr(b, "line_buffering", None),
                 a.read() == b.read()]
    a.close(); b.close()
rel = os.path.relpath(p)
with builtins.open(rel, "rb") as a, io.open(rel, "rb") as b:
    out["relative"] = a.__sizeof__() == b.__sizeof__()
for bad in (12345678, os.path.join(os.path.dirname(p), "missing")):
    try:
        builtins.open(bad, "rb")
    except OSError as e:
        out.setdefault("errors", []).append(type(e).__name__)
print(json.dumps(out))
"""
        f = os.path.join(self.tmp, "note.txt")
        with io.open(f, "w") as w:
            w.write("a line\nanother\n")
        env = self.env(CLAIRFS_REPORT_SOCKET="@clairfs-report-test-none",
                       CLAIRFS_REPORT_ROOT=self.tmp)
        p = subprocess.run([PY, "-c", code, f], env=env, capture_output=True, text=True,
                           timeout=60, cwd=self.tmp)
        self.assertEqual(p.returncode, 0, p.stderr)
        out = json.loads(p.stdout)
        self.assertTrue(out["patched"])
        self.assertEqual(out["name"], "open")
        self.assertEqual(out["rb"], [True, True, True, True])
        self.assertEqual(out["r"], [True, True, True, True])
        self.assertTrue(out["relative"])
        self.assertEqual(out["errors"], ["OSError", "FileNotFoundError"])  # as io.open raises
        self.assertEqual(p.stderr, "")
        off = self.run_py("import builtins, io; print(builtins.open is io.open)",
                          CLAIRFS_REPORT="0")
        self.assertEqual(off.strip(), "True")

    def test_off(self):
        out = self.run_py("import sys; print(any(type(f).__module__ == 'clairfs_report'"
                          " for f in sys.meta_path))", CLAIRFS_REPORT="0")
        self.assertEqual(out.strip(), "False")


class Wire(unittest.TestCase):
    def test_mountinfo(self):
        from clairfs_report import channel
        text = ("36 35 98:0 / /mnt/a\\040b rw - fuse.clairfs clairfs rw\n"
                "37 35 98:0 / /mnt/c rw shared:1 - ext4 /dev/x rw\n"
                "38 35 98:0 / /mnt/d rw shared:1 master:2 - fuse.clairfs clairfs rw\n")
        self.assertEqual(channel.parse_mountinfo(text), ["/mnt/a b", "/mnt/d"])

    def test_order_chunks(self):
        from array import array
        from clairfs_report import wire
        frames = wire.order(1, 2, 3, array("I", range(wire.ORDER_CHUNK + 5)))
        self.assertEqual(len(frames), 2)
        self.assertEqual([f[4 + 25] for f in frames], [0, 1])


if __name__ == "__main__":
    unittest.main()
