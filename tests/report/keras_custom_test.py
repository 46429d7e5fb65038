"""Tests of the order reporter's Keras side over a Sequence (Keras 3: PyDataset) of the job's
own (clairfs_report/keras_custom.py, keras_hooks.py): keras_job.py's "custom" Sequence, whose
batch b opens its files with PIL, under fit on both Keras lines against a FakeDaemon.

usage: keras_custom_test.py VENV_PYTHON [...]   (run by keras_report_test.sh)
"""
import sys
import unittest

from fake_daemon import FakeDaemon
from keras_test import BATCH, LEN, PYTHONS, Jobs


class KerasCustom(Jobs):
    def custom(self, py, kind, steps=None, epochs=4, workers=1):
        d = FakeDaemon()
        try:
            r = self.job(py, {"custom": kind, "steps": steps, "epochs": epochs, "batch": BATCH,
                              "seed": 3, "workers": workers}, d)
        finally:
            d.close()
        self.assertEqual((d.errors, r["stderr"]), ([], ""))
        self.assertEqual(r["len"], LEN)
        pid = r["pid"]
        got = {e: idx for (p, t, s, e), idx in d.orders.items() if p == pid}
        tabs = {t for (p, t, s, e) in d.orders if p == pid}
        passes = {}
        for tag, b, idx in r["loads"]:
            if tag is not None:  # None: the adapter's peek
                passes.setdefault(tag, []).append((b, idx))
        guesses = {e: idx for (p, t, s, e), idx in d.guesses.items() if p == pid}
        return d, r, got, tabs, list(passes.values()), guesses

    def test_custom_sequence(self):
        # fit over a Sequence (Keras 3: PyDataset) of the job's own: a table of its batches,
        # each batch's files learned as fit's generator reads it (PIL's opens, seen by the
        # audit hook); each epoch after the first reported as the batch indices it reads, in
        # order; tf.keras 2 guesses each next epoch as the one before ends. Keras 3 with fewer
        # steps than batches (a pass serving 2 epochs): nothing reported.
        for py in PYTHONS:
            for steps in (None, 3):
                with self.subTest(py=py, steps=steps):
                    d, r, got, tabs, passes, guesses = self.custom(py, "plain", steps)
                    if self.keras3(py) and steps:
                        self.assertEqual((got, guesses), ({}, {}))
                        continue
                    s = steps or LEN
                    self.assertEqual(sorted(got), [1, 2, 3])  # epoch 0 learns the table
                    self.assertEqual(len(tabs), 1)
                    table = tabs.pop()
                    for e in range(1, 4):
                        self.assertEqual(got[e], [b for b, _ in passes[e][:s]], (py, e))
                    # Every batch read (all in epoch 0 unless steps are fewer): its files.
                    files = r["filepaths"]
                    self.assertEqual(d.files[table], {b: ["data/" + files[i] for i in idx]
                                                      for p in passes for b, idx in p})
                    self.assertEqual(sorted(d.files[table]), list(range(LEN)))
                    # batch_size: the most files a batch opened (the daemon counts files)
                    self.assertEqual(d.loaders, {(r["pid"], 1): {
                        "batch_size": BATCH, "num_workers": 0, "prefetch_factor": 1}})
                    if self.keras3(py):
                        self.assertEqual(guesses, {})
                    else:
                        self.assertEqual(sorted(guesses), [1, 2, 3, 4])
                        self.assertEqual([guesses[e] for e in (1, 2, 3)], [got[1], got[2], got[3]])

    def test_custom_sequence_workers(self):
        # Read by a pool of 2 threads (tf.keras 2: fit(workers=2), an OrderedEnqueuer per
        # epoch; Keras 3: PyDataset(workers=2), one enqueuer whose thread each epoch starts):
        # each batch's files learned in the pool thread that reads it, each epoch after the
        # first reported as the pass its enqueuer drew (tf.keras 2: as foreseen, exactly).
        for py in PYTHONS:
            with self.subTest(py=py):
                d, r, got, tabs, passes, guesses = self.custom(py, "plain", epochs=3, workers=2)
                self.assertEqual(sorted(got), [1, 2])
                table = tabs.pop()
                files = r["filepaths"]
                loads = [(b, idx) for p in passes for b, idx in p]
                self.assertEqual(d.files[table], {b: ["data/" + files[i] for i in idx]
                                                  for b, idx in loads})
                self.assertEqual(d.loaders, {(r["pid"], 1): {
                    "batch_size": BATCH, "num_workers": 2, "prefetch_factor": 5}})
                # Epoch e's loads: its enqueuer's (tf.keras 2), the e-th pass of the one
                # enqueuer's (Keras 3); each a whole pass.
                per_epoch = passes if len(passes) == 3 else [
                    loads[e * LEN:(e + 1) * LEN] for e in range(3)]
                for e in (1, 2):
                    self.assertEqual(sorted(got[e]), list(range(LEN)), (py, e))
                    self.assertEqual(sorted(b for b, _ in per_epoch[e]), list(range(LEN)))
                if not self.keras3(py):
                    self.assertEqual([guesses[e] for e in (1, 2)], [got[1], got[2]])

    def test_custom_sequence_reshuffled(self):
        # Its on_epoch_end redraws which samples each batch holds: epoch 1's batches open
        # other files than epoch 0 taught, so reports stop there (epoch 1's went out before
        # its reads showed it; the daemon counts them as deviations).
        for py in PYTHONS:
            with self.subTest(py=py):
                d, r, got, tabs, passes, guesses = self.custom(py, "reshuffle")
                self.assertEqual(sorted(got), [1])
                self.assertEqual(sorted(guesses), [] if self.keras3(py) else [1])

    def test_custom_sequence_in_memory(self):
        # Its files loaded up front: its batches open nothing, so nothing is reported after
        # the epoch that learned so (no ORDER, no GUESS, no TABLE_FILES).
        for py in PYTHONS:
            with self.subTest(py=py):
                d, r, got, tabs, passes, guesses = self.custom(py, "memory", epochs=3)
                self.assertEqual(len(passes), 3)  # it was read
                self.assertEqual((got, guesses, d.files), ({}, {}, {}))

    def test_custom_same_results(self):
        for py in PYTHONS:
            with self.subTest(py=py):
                cfg = {"custom": "plain", "epochs": 2, "batch": BATCH, "seed": 3}
                d = FakeDaemon()
                try:
                    on = self.job(py, cfg, d)
                finally:
                    d.close()
                off = self.job(py, cfg, None, report=False)
                self.assertTrue(d.orders)
                self.assertEqual((on["loss"], on["weights"], on["loads"]),
                                 (off["loss"], off["weights"], off["loads"]))


if __name__ == "__main__":
    PYTHONS[:] = [a for a in sys.argv[1:] if not a.startswith("-")]
    unittest.main(argv=[sys.argv[0]] + [a for a in sys.argv[1:] if a.startswith("-")])
