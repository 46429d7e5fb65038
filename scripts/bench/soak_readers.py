#!/usr/bin/env python3
"""Readers for scripts/bench/soak.sh: THREADS threads per mount, each reading
random files of the tree (whole files, or a random range with pread) from a
random mount until SECONDS have passed, and comparing every byte with the
source tree. Each read drops the file's pages from the page cache afterwards,
so reads reach the daemons rather than the kernel's cache. Meanwhile the daemons' RSS, open fds and threads are sampled
every INTERVAL seconds. Prints one JSON object with the totals and samples.

usage: soak_readers.py SRC SECONDS THREADS INTERVAL MOUNT:PID [MOUNT:PID ...]
"""
import json
import os
import random
import sys
import threading
import time


def daemon_sample(pid):
    rss_kb = threads = 0
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss_kb = int(line.split()[1])
            elif line.startswith("Threads:"):
                threads = int(line.split()[1])
    return {"rss_mib": round(rss_kb / 1024, 1), "fds": len(os.listdir("/proc/%d/fd" % pid)),
            "threads": threads}


def main():
    src, seconds, nthreads, interval = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
    mounts = [(m, int(p)) for m, p in (a.rsplit(":", 1) for a in sys.argv[5:])]
    files = []
    for root, _, names in os.walk(src):
        for n in names:
            path = os.path.join(root, n)
            if os.path.isfile(path) and not os.path.islink(path):
                files.append(os.path.relpath(path, src))
    files.sort()
    # The source bytes in RAM: the comparison must not depend on the disk.
    source = {}
    for f in files:
        with open(os.path.join(src, f), "rb") as h:
            source[f] = h.read()
    stop = time.monotonic() + seconds
    lock = threading.Lock()
    totals = {"reads": 0, "bytes": 0, "wrong": 0, "errors": 0, "first_problems": []}

    def problem(kind, text):
        with lock:
            totals[kind] += 1
            if len(totals["first_problems"]) < 20:
                totals["first_problems"].append(text)

    def reader(seed):
        rng = random.Random(seed)
        reads = nbytes = 0
        while time.monotonic() < stop:
            mount = rng.choice(mounts)[0]
            f = rng.choice(files)
            want = source[f]
            try:
                fd = os.open(os.path.join(mount, f), os.O_RDONLY)
                try:
                    if rng.random() < 0.5 or not want:
                        chunks = []
                        while True:
                            b = os.read(fd, 1 << 20)
                            if not b:
                                break
                            chunks.append(b)
                        got, expect = b"".join(chunks), want
                    else:
                        off = rng.randrange(len(want))
                        n = rng.randrange(1, 256 << 10)
                        got, expect = os.pread(fd, n, off), want[off:off + n]
                    # Drop the file's pages so that the next read of it reaches
                    # the daemon, not the kernel's page cache.
                    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                finally:
                    os.close(fd)
            except OSError as e:
                problem("errors", "%s on %s: %s" % (f, mount, e))
                continue
            reads += 1
            nbytes += len(got)
            if got != expect:
                problem("wrong", "%s on %s: %d bytes differ from the source" % (f, mount, len(got)))
        with lock:
            totals["reads"] += reads
            totals["bytes"] += nbytes

    workers = [threading.Thread(target=reader, args=(i,)) for i in range(nthreads * len(mounts))]
    for w in workers:
        w.start()
    samples = []
    t0 = time.monotonic()
    while any(w.is_alive() for w in workers):
        samples.append({"t": round(time.monotonic() - t0, 1),
                        "daemons": [daemon_sample(p) for _, p in mounts]})
        time.sleep(interval)
    for w in workers:
        w.join()
    totals.update({"seconds": round(time.monotonic() - t0, 1), "readers": len(workers),
                   "files": len(files), "samples": samples})
    json.dump(totals, sys.stdout)
    return 0 if totals["wrong"] == 0 and totals["errors"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
