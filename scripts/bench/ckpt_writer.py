"""Writes checkpoint files the way a training step does and says when each
stage was over (one JSON line: wall-clock times, time.time()):

    python ckpt_writer.py --mib M [--fsync] PATH...

One process per PATH writes M MiB of incompressible bytes to it in 8 MiB
writes, all at once; "closed" is when the last close returned. With --fsync
each then opens its file again and fsyncs it: "durable" is when the last
fsync returned (a writer that must know its checkpoint is safe). "start" is
when the writers were started."""
import argparse
import json
import multiprocessing
import os
import time

CHUNK = 8 << 20


def write_one(path, mib, fsync, start, out):
    buf = os.urandom(CHUNK)
    with open(path, "wb") as f:
        for _ in range(mib * (1 << 20) // CHUNK):
            f.write(buf)
    closed = time.time()
    durable = None
    if fsync:
        fd = os.open(path, os.O_RDONLY)
        os.fsync(fd)
        os.close(fd)
        durable = time.time()
    out.put((closed, durable))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, required=True)
    ap.add_argument("--fsync", action="store_true")
    ap.add_argument("paths", nargs="+")
    a = ap.parse_args()
    for p in a.paths:
        os.makedirs(os.path.dirname(p), exist_ok=True)
    out = multiprocessing.Queue()
    start = time.time()
    procs = [multiprocessing.Process(target=write_one, args=(p, a.mib, a.fsync, start, out))
             for p in a.paths]
    for p in procs:
        p.start()
    results = [out.get() for _ in procs]
    for p in procs:
        p.join()
    closed = max(r[0] for r in results)
    durable = max(r[1] for r in results) if a.fsync else None
    print(json.dumps({"start": start, "closed": closed, "durable": durable}))


if __name__ == "__main__":
    main()
