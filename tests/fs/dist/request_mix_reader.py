#!/usr/bin/python3
"""One reader of tests/fs/dist/request_mix_test.sh: reads a seeded sample of the
files under MNT in a mix of patterns and checks every byte against SRC.

usage: request_mix_reader.py SRC MNT --seed S [--files N] [--rounds R]

Patterns (chosen per file and round, from the seed):
  whole   one read() of more than the file, then one at EOF that returns 0
  chunks  read() in fixed-size chunks up to EOF (1 byte .. 200 KiB)
  pread   pread() at random offsets and lengths: zero-length, past EOF,
          across EOF, inside one frame and across frames
  twice   the whole file twice through one descriptor (the second from the
          kernel's page cache)
  drop    the whole file, then POSIX_FADV_DONTNEED on it, then again (the
          second read goes back to the daemon: its RAM or a pack)
Between rounds half of the sample has its page cache dropped too.

Every read must return exactly the bytes of the same range of the source
file: a different byte, a short or long read, or an error is printed as
"FAIL reader S: PATH offset O length L: what" and makes the exit status 1.
The last line on stdout is a JSON summary (reads issued, those of them that
returned bytes, bytes checked, pattern counts).
"""
import argparse
import json
import os
import random
import sys

ap = argparse.ArgumentParser()
ap.add_argument("src")
ap.add_argument("mnt")
ap.add_argument("--seed", type=int, required=True)
ap.add_argument("--files", type=int, default=300)
ap.add_argument("--rounds", type=int, default=3)
args = ap.parse_args()
rng = random.Random(args.seed)

counts = {"reads": 0, "data_reads": 0, "bytes": 0, "drops": 0, "failures": 0}


def fail(rel, offset, length, what):
    counts["failures"] += 1
    if counts["failures"] <= 20:  # enough to diagnose; the count says the rest
        print("FAIL reader %d: %s offset %d length %d: %s" % (args.seed, rel, offset, length, what),
              file=sys.stderr, flush=True)


def expect(rel, want_fd, size, offset, length, got):
    """Compares GOT, the answer to a read of LENGTH bytes at OFFSET, with the
    source: the same range, cut at the end of the file."""
    n = max(0, min(length, size - offset))
    want = os.pread(want_fd, n, offset) if n else b""
    counts["bytes"] += len(got)
    if got == want:
        return True
    if len(got) != len(want):
        fail(rel, offset, length, "returned %d bytes, want %d" % (len(got), len(want)))
        return False
    i = next(k for k in range(len(want)) if got[k] != want[k])
    fail(rel, offset, length, "byte at %d is %#04x, want %#04x" % (offset + i, got[i], want[i]))
    return False


def tally(got):
    """Counts a read issued, and apart those that returned bytes (reads at
    or past EOF and of zero length are answered by the kernel alone)."""
    counts["reads"] += 1
    counts["data_reads"] += 1 if got else 0
    return got


def read_at(fd, length, offset):
    return tally(os.pread(fd, length, offset))


def read_next(fd, length):
    return tally(os.read(fd, length))


def whole(rel, fd, want_fd, size):
    """One read() of more than the file from the start, then one at EOF."""
    os.lseek(fd, 0, os.SEEK_SET)
    if expect(rel, want_fd, size, 0, size + 4096, read_next(fd, size + 4096)):
        expect(rel, want_fd, size, size, 4096, read_next(fd, 4096))


def chunks(rel, fd, want_fd, size):
    # Chunks small enough to be many reads, never so small that a 1 MiB file
    # takes more than about 2000 of them.
    floor = max(1, size // 2000)
    chunk = max(floor, rng.choice([1, 511, 4096, 65535, 65536, 65537, 200000]))
    os.lseek(fd, 0, os.SEEK_SET)
    offset = 0
    while True:
        got = read_next(fd, chunk)
        if not expect(rel, want_fd, size, offset, chunk, got) or not got:
            return
        offset += len(got)


def preads(rel, fd, want_fd, size):
    tries = [(rng.randrange(size + 1), 0),                  # zero-length
             (size + rng.randrange(1, 100000), 4096),        # past EOF
             (max(0, size - rng.randrange(1, 5000)), 8192)]  # across EOF
    for _ in range(rng.randint(3, 10)):
        offset = rng.randrange(size + 1)
        tries.append((offset, rng.choice([1, 7, 4096, 65536, 70000, rng.randrange(1, 300000)])))
    rng.shuffle(tries)
    for offset, length in tries:
        if not expect(rel, want_fd, size, offset, length, read_at(fd, length, offset)):
            return


def twice(rel, fd, want_fd, size):
    whole(rel, fd, want_fd, size)
    whole(rel, fd, want_fd, size)


def drop(rel, fd, want_fd, size):
    whole(rel, fd, want_fd, size)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    counts["drops"] += 1
    whole(rel, fd, want_fd, size)


PATTERNS = {"whole": whole, "chunks": chunks, "pread": preads, "twice": twice, "drop": drop}
patterns = {name: 0 for name in PATTERNS}  # files read with each


def check(rel, pattern):
    try:
        want_fd = os.open(os.path.join(args.src, rel), os.O_RDONLY)
    except OSError as e:
        fail(rel, 0, 0, "cannot open the source: %s" % e)
        return
    try:
        size = os.fstat(want_fd).st_size
        fd = os.open(os.path.join(args.mnt, rel), os.O_RDONLY)
        try:
            if os.fstat(fd).st_size != size:
                fail(rel, 0, 0, "size %d in the mount, %d in the source" % (os.fstat(fd).st_size, size))
                return
            patterns[pattern] += 1
            PATTERNS[pattern](rel, fd, want_fd, size)
        finally:
            os.close(fd)
    except OSError as e:
        fail(rel, 0, 0, "%s" % e)
    finally:
        os.close(want_fd)


def drop_page_cache(rel):
    try:
        fd = os.open(os.path.join(args.mnt, rel), os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
        counts["drops"] += 1
    except OSError as e:
        fail(rel, 0, 0, "dropping its page cache: %s" % e)


files = []
for d, dirs, names in os.walk(args.src):
    dirs.sort()
    files += sorted(os.path.relpath(os.path.join(d, n), args.src) for n in names)
sample = rng.sample(files, min(args.files, len(files)))
for r in range(args.rounds):
    order = list(sample)
    rng.shuffle(order)
    for rel in order:
        check(rel, rng.choice(list(PATTERNS)))
    if r + 1 < args.rounds:
        for rel in rng.sample(sample, len(sample) // 2):
            drop_page_cache(rel)

print(json.dumps({"seed": args.seed, **counts, "patterns": patterns}))
sys.exit(1 if counts["failures"] else 0)
