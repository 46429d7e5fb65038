#!/usr/bin/env python3
"""Writes a tricky source tree for the integration tests.

usage: make_tree.py DIR [--small N] [--seed S] [--no-links]

Unicode and spaces in names, a name with a newline and one that is not UTF-8,
deep nesting, empty files and directories, files that span several frames
(compressible and random), N small files, and symlinks that stay inside DIR.
"""
import argparse
import os
import random


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--small", type=int, default=10000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-links", action="store_true")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    d = a.dir
    os.makedirs(d, exist_ok=True)

    text = b"".join(b"line %d of a compressible file\n" % i for i in range(200000))
    write(os.path.join(d, "big", "text-multiframe.txt"), text)            # ~6 MiB, compresses
    write(os.path.join(d, "big", "random-multiframe.bin"), rng.randbytes(3 * 1024 * 1024 + 17))
    mixed = b"".join((rng.randbytes(300000) if i % 2 else text[:300000]) for i in range(8))
    write(os.path.join(d, "big", "mixed.bin"), mixed)                     # raw and zstd frames
    write(os.path.join(d, "big", "exactly-1MiB.bin"), rng.randbytes(1 << 20))

    write(os.path.join(d, "empty-file"), b"")
    os.makedirs(os.path.join(d, "empty dir"), exist_ok=True)
    os.makedirs(os.path.join(d, "a", "empty", "nested", "dirs"), exist_ok=True)
    write(os.path.join(d, "unicode", "naïve café ☕.txt"), "crème brûlée\n".encode())
    write(os.path.join(d, "unicode", "日本語", "ファイル.jpg"), rng.randbytes(5000))
    write(os.path.join(d, "spaces in name", "file with  two  spaces"), b"spaces\n")
    write(os.path.join(d, "odd", "new\nline"), b"a name with a newline\n")
    write(os.fsdecode(os.path.join(os.fsencode(d), b"odd", b"latin1-\xe9t\xe9")), b"not utf-8\n")
    deep = os.path.join(d, *["level%02d" % i for i in range(40)])
    write(os.path.join(deep, "bottom.txt"), b"deep\n")

    classes = ["class_%03d" % c for c in range(20)]
    for i in range(a.small):
        size = rng.choice([0, 1, 100, 4096, 20000, rng.randint(1, 70000)])
        payload = rng.randbytes(size) if i % 3 else (b"abc" * (size // 3 + 1))[:size]
        write(os.path.join(d, "train", classes[i % len(classes)], "img_%05d.jpg" % i), payload)

    if not a.no_links:
        os.symlink("../big/text-multiframe.txt", os.path.join(d, "unicode", "link-to-text"))
        os.symlink("../train/class_000", os.path.join(d, "a", "link-to-class"))


if __name__ == "__main__":
    main()
