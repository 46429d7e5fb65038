"""The reporter against DataLoader shapes beyond report_test.py's: other samplers, batch
samplers, datasets wrapped or streamed, loaders read in part, side by side, peeked at.

Each job (report_job.py) runs once against a FakeDaemon and once with CLAIRFS_REPORT=0: the
batches, files, random draws (in the samples and after the loops) must be the same, stderr
empty. Per loader, the expectation is one of
  EXACT   every epoch reported, the indices the loader yielded (the files it read);
  PARTIAL the first epoch broken off: its report begins with what was read and is as long as
          the full epoch's, later epochs EXACT;
  NONE    nothing reported (passed through untouched).
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from report_test import Base, FakeDaemon, flat  # noqa: E402

EXACT, PARTIAL, NONE = "exact", "partial", None
F = {"data": "folder"}


def v(expect, **cfg):
    """(config, [expectation of its loader, of its val loader if any], shape or None)."""
    shape = cfg.pop("shape", None)
    return dict(F, **cfg), [expect] * (2 if cfg.get("val") else 1), shape


NO_WORKERS = [
    v(EXACT, sampler="weighted", epochs=2),
    v(EXACT, sampler="weighted-norep"),
    v(EXACT, sampler="subset"),
    v(EXACT, batch_sampler="batch", drop_last=True, epochs=2, shape=(4, 0, 2)),
    v(NONE, batch_sampler="mine"),
    v(NONE, sampler="mine"),
    v(NONE, sampler="mine-nolen"),
    v(EXACT, sampler="random", drop_last=True),
    v(EXACT, data="subset", sampler="random"),
    v(EXACT, data="concat", sampler="random", epochs=2),
    v(EXACT, data="dsfolder", sampler="random"),
    v(EXACT, sampler="dist-noshuffle", epochs=2),
    v(EXACT, sampler="dist", set_epoch=False, epochs=2),
    v(PARTIAL, sampler="random", epochs=2, **{"break": 2}),
    v(EXACT, sampler="random", val=True, epochs=2),
    v(EXACT, sampler="random", peek=True),
    v(EXACT, sampler="weighted", loader_gen=5),
    v(EXACT, batch_sampler="batch", sampler="gen", epochs=2),
    v(NONE, data="iterable"),
    v(NONE, sampler="endless", epochs=2, **{"break": 3}),
    v(NONE, sampler="huge", **{"break": 3}),
    v(NONE, sampler="negative"),
    v(NONE, data="keyed", sampler="keys"),
    v(EXACT, sampler="random", batch=None, shape=(1, 0, 2)),
    v(EXACT, sampler="random", pin=True),
    v(EXACT, sampler="random-rep", epochs=2),
    v(EXACT, sampler="random-more"),
    v(NONE, sampler="random-more-gen"),  # a second permutation drawn lazily: not predicted
    v(NONE, sampler="list"),
]
W = {"workers": 2, "ctx": "fork"}
WORKERS = [
    v(EXACT, sampler="weighted", init=True, epochs=2, **W),
    v(EXACT, batch_sampler="batch", drop_last=True, prefetch=4, shape=(4, 2, 4), **W),
    v(EXACT, data="custom", sampler="subset", epochs=2, **W),
    v(EXACT, data="concat", sampler="random", **W),
    v(PARTIAL, sampler="random", persistent=True, epochs=2, **{"break": 2}, **W),
    v(PARTIAL, sampler="random", epochs=2, **{"break": 1}, **W),
    v(NONE, sampler="huge", **{"break": 3}, **W),
    v(NONE, sampler="endless", **{"break": 3}, **W),
    v(NONE, data="iterable", **W),
    v(NONE, sampler="mine", **W),
    v(EXACT, sampler="gen", pin=True, epochs=2, **W),
    v(NONE, data="keyed", sampler="keys", **W),
    v(EXACT, sampler="random", val=True, **W),
]
SPAWN = [
    v(EXACT, sampler="weighted-norep", init=True, workers=2, ctx="spawn"),
    v(EXACT, data="dsfolder", sampler="subset", workers=2, ctx="spawn", persistent=True,
      epochs=2),
]
# With workers, iter(loader) starts the workers, which read the first batches: torch draws
# the epoch, and it is reported though the job reads none of it.
PEEK = [v(EXACT, sampler="random", peek=True, epochs=2, workers=2)]


class Variations(Base):
    def run_both(self, runs, seed):
        d = FakeDaemon()
        self.addCleanup(d.close)
        on = self.job([r[0] for r in runs], d, seed=seed)
        off = self.job([r[0] for r in runs], None, seed=seed, CLAIRFS_REPORT="0")
        for k in ("loaders", "files", "noise", "rand", "random"):
            self.assertEqual(on[k], off[k], k)
        self.assertEqual((on["stderr"], off["stderr"]), ("", ""))
        self.assertEqual((d.errors, d.more_segments), ([], 0))  # one segment per epoch
        return d, on

    def files_of(self, d, table):
        if table in d.paths:
            return dict(enumerate(d.paths[table]))
        learned = {}
        for key, recs in d.files.items():
            if key == table or d.aliases.get(key) == table:
                for index, paths in recs.items():
                    self.assertEqual(len(paths), 1, paths)  # each sample opens one file
                    self.assertEqual(learned.setdefault(index, paths[0]), paths[0])
        return learned

    def check(self, runs, seed, skip=0):
        d, r = self.run_both(runs, seed)
        got = self.orders_of(d, r["pid"])
        expects = [(cfg, e, shape) for cfg, es, shape in runs for e in es]
        self.assertEqual(len(expects), len(r["loaders"]))
        stream = 0
        for n, (cfg, expect, shape) in enumerate(expects):
            if expect is NONE:
                continue
            stream += 1
            self.assertIn(stream, got, cfg)
            epochs, files = r["loaders"][n], r["files"][n]
            reported = got[stream]
            self.assertEqual(sorted(reported), list(range(skip + len(epochs))), cfg)
            for e, batches in enumerate(epochs):
                table, idx = reported[skip + e]
                read = flat(batches)
                if expect is PARTIAL and e == 0:
                    self.assertEqual(len(idx), len(reported[skip + 1][1]), cfg)
                    idx = idx[:len(read)]
                if cfg["data"] != "concat":  # the others yield their table's index
                    self.assertEqual(idx, read, (cfg, e))
                # ImageFolder, DatasetFolder, through Subset and ConcatDataset: paths tables
                self.assertEqual(table in d.paths, cfg["data"] != "custom", cfg)
                table_files = self.files_of(d, table)
                self.assertEqual([table_files.get(i) for i in idx], files[e], (cfg, e))
            if shape is not None:
                want = dict(zip(("batch_size", "num_workers", "prefetch_factor"), shape))
                self.assertEqual(d.loaders[(r["pid"], stream)], want, cfg)
        self.assertEqual(sorted(got), list(range(1, stream + 1)))

    def test_no_workers(self):
        self.check(NO_WORKERS, 11)

    def test_workers(self):
        self.check(WORKERS, 12)

    def test_spawn(self):
        self.check(SPAWN, 13)

    def test_peek_with_workers(self):
        self.check(PEEK, 14, skip=1)


if __name__ == "__main__":
    unittest.main()
