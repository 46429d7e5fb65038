#!/usr/bin/env python3
"""Replays one training rank's reads through a clairfs mount, as a DataLoader
would issue them, and checks every byte against the source tree.

usage: replay_reader.py MNT_ROOT SRC_ROOT --rank R --world N --seed S
       [--epochs E] [--workers W] [--batch B] [--interval SECONDS] [--out FILE]
       [--stream-world M --stream-rank K]

The order is the real thing: torchvision's ImageFolder over MNT_ROOT (its
directory scan also shows the kernel every inode) and torch's
DistributedSampler with set_epoch. Batch j of an epoch goes to worker thread
j % W; batch j starts no earlier than interval * j after the epoch started (a
fixed consumption rate). With --barrier DIR the ranks start together, keep
one shared schedule (batch j of epoch e at T0 + (e * batches + j) *
interval) and stay in step as DDP's per-step allreduce keeps real ranks: a
batch starts only once every rank has read all batches more than --lead
before it (default workers x 2 + 1: each loader worker holds prefetch_factor
2 batches), however slowly one rank is scheduled. With
--stream-world/--stream-rank the reader follows that sampler rank's order
instead of its own (several readers of one shared stream). Prints one JSON
line; exit 1 on any wrong byte.
"""
import argparse
import json
import os
import sys
import threading
import time

import torch  # noqa: F401  (the sampler needs it)
from torch.utils.data import DistributedSampler
from torchvision.datasets import ImageFolder


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mnt")
    ap.add_argument("src")
    ap.add_argument("--rank", type=int, required=True)
    ap.add_argument("--world", type=int, required=True)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--interval", type=float, default=0.02)
    ap.add_argument("--out")
    ap.add_argument("--barrier", help="directory shared by the --world ranks")
    ap.add_argument("--lead", type=int, help="batches a rank may run ahead (with --barrier)")
    ap.add_argument("--stream-world", type=int, help="the sampler's num_replicas (default --world)")
    ap.add_argument("--stream-rank", type=int, help="the sampler rank to follow (default --rank)")
    a = ap.parse_args()

    dataset = ImageFolder(a.mnt, loader=lambda p: p)  # listing only; reads are ours
    sampler = DistributedSampler(
        dataset, num_replicas=a.world if a.stream_world is None else a.stream_world,
        rank=a.rank if a.stream_rank is None else a.stream_rank, shuffle=True, seed=a.seed)
    bad = []
    opened = [0]
    lock = threading.Lock()
    start = time.time()
    if a.barrier:
        # Every rank writes when it is ready; all start 0.2 s after the last.
        with open(os.path.join(a.barrier, "rank%d.tmp" % a.rank), "w") as f:
            f.write(repr(time.time()))
        os.rename(os.path.join(a.barrier, "rank%d.tmp" % a.rank),
                  os.path.join(a.barrier, "rank%d" % a.rank))
        deadline = time.time() + 120
        while True:
            names = [os.path.join(a.barrier, "rank%d" % r) for r in range(a.world)]
            if all(os.path.exists(n) for n in names):
                start = max(float(open(n).read()) for n in names) + 0.2
                break
            if time.time() > deadline:
                print("barrier: the other ranks never came", file=sys.stderr)
                return 1
            time.sleep(0.01)
    lead = a.workers * 2 + 1 if a.lead is None else a.lead
    done_steps = set()
    done_through = [0]  # steps (batches over all epochs) all read by this rank

    def finished(step):
        with lock:
            done_steps.add(step)
            moved = False
            while done_through[0] in done_steps:
                done_through[0] += 1
                moved = True
            if moved and a.barrier:
                tmp = os.path.join(a.barrier, "done%d.tmp" % a.rank)
                with open(tmp, "w") as f:
                    f.write(str(done_through[0]))
                os.rename(tmp, os.path.join(a.barrier, "done%d" % a.rank))

    def wait_for_others(step):
        if not a.barrier:
            return
        need = step - lead
        while True:
            slowest = None
            for r in range(a.world):
                try:
                    with open(os.path.join(a.barrier, "done%d" % r)) as f:
                        d = int(f.read())
                except (FileNotFoundError, ValueError):
                    d = 0
                slowest = d if slowest is None else min(slowest, d)
            if slowest >= need:
                return
            time.sleep(0.002)

    t_start = time.monotonic()
    for epoch in range(a.epochs):
        sampler.set_epoch(epoch)
        indices = list(sampler)
        batches = [indices[i:i + a.batch] for i in range(0, len(indices), a.batch)]
        t0 = start + epoch * len(batches) * a.interval

        def worker(w):
            for j in range(w, len(batches), a.workers):
                step = epoch * len(batches) + j
                wait_for_others(step)
                delay = t0 + j * a.interval - time.time()
                if delay > 0:
                    time.sleep(delay)
                for i in batches[j]:
                    path = dataset.samples[i][0]
                    rel = os.path.relpath(path, a.mnt)
                    try:
                        with open(path, "rb") as f:
                            got = f.read()
                    except OSError as e:  # counted as wrong; the other ranks go on
                        got = e
                    with open(os.path.join(a.src, rel), "rb") as f:
                        want = f.read()
                    with lock:
                        opened[0] += 1
                        if got != want:
                            bad.append(rel)
                finished(step)

        threads = [threading.Thread(target=worker, args=(w,)) for w in range(a.workers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    result = {"rank": a.rank, "files": len(dataset), "opened": opened[0],
              "wrong": len(bad), "first_wrong": bad[:5],
              "seconds": round(time.monotonic() - t_start, 3)}
    line = json.dumps(result)
    print(line)
    if a.out:
        with open(a.out, "w") as f:
            f.write(line + "\n")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
