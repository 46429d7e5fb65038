#!/usr/bin/env python3
"""Reads a clairfs mount the way Keras model.fit(shuffle=True) reads a
flow_from_directory iterator: the files of every batch are fixed, the order of
the batches in an epoch comes from Python's unseeded random. Checks every byte
against the source tree.

usage: keras_fit_reader.py MNT_ROOT SRC_ROOT ORDER --batch B --epochs E --lead L
       [--interval SECONDS] [--out FILE]

ORDER is clairfs-order's output for the iterator (--protocol fit): epoch 0
starts with the L tensor-spec batches, read first and in order; then each
epoch's batches in batch-index order. Each epoch's batches are shuffled with
random.shuffle (never seeded) and read one after another, each batch's files
in order, one batch per interval (a training step). Prints one JSON line;
exit 1 on any wrong byte.
"""
import argparse
import json
import os
import random
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mnt")
    ap.add_argument("src")
    ap.add_argument("order")
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--epochs", type=int, required=True)
    ap.add_argument("--lead", type=int, default=0)
    ap.add_argument("--interval", type=float, default=0.01)
    ap.add_argument("--out")
    a = ap.parse_args()

    paths = [line.rstrip("\n") for line in open(a.order) if line.strip()]
    lead = paths[:a.lead * a.batch]
    per_epoch = (len(paths) - len(lead)) // a.epochs
    if per_epoch * a.epochs + len(lead) != len(paths) or per_epoch % a.batch:
        print("order: %d paths do not split into %d epochs of whole batches of %d after %d lead"
              % (len(paths), a.epochs, a.batch, len(lead)), file=sys.stderr)
        return 1
    bad, opened, order = [], 0, []
    for epoch in range(a.epochs):
        start = len(lead) + epoch * per_epoch
        files = paths[start:start + per_epoch]
        batches = [files[i:i + a.batch] for i in range(0, len(files), a.batch)]
        random.shuffle(batches)  # model.fit(shuffle=True): unseeded
        if epoch == 0:
            batches = [lead[i:i + a.batch] for i in range(0, len(lead), a.batch)] + batches
        order.append([b[0] for b in batches])
        for b in batches:
            t0 = time.monotonic()
            for rel in b:
                with open(os.path.join(a.mnt, rel), "rb") as f:
                    data = f.read()
                opened += 1
                with open(os.path.join(a.src, rel), "rb") as f:
                    if data != f.read():
                        bad.append(rel)
            rest = a.interval - (time.monotonic() - t0)
            if rest > 0:
                time.sleep(rest)
    report = {"opened": opened, "bad": bad[:5], "bad_count": len(bad),
              "first_files_of_batches": order}
    line = json.dumps(report)
    print(json.dumps({"opened": opened, "bad_count": len(bad)}))
    if a.out:
        with open(a.out, "w") as f:
            f.write(line + "\n")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
