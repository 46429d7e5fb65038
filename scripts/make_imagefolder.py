#!/usr/bin/env python3
"""Writes a synthetic ImageFolder dataset of real JPEG files.

usage: make_imagefolder.py DIR [--classes C] [--per-class N] [--size PX] [--seed S]

DIR/train/class_XXX/img_XXXXX.jpg: each class has its own base colour and
pattern plus noise, so a small CNN can learn it. Needs Debian's python3-pil
and python3-numpy (run with /usr/bin/python3).
"""
import argparse
import os

import numpy as np
from PIL import Image


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--classes", type=int, default=4)
    ap.add_argument("--per-class", type=int, default=64)
    ap.add_argument("--size", type=int, default=96, help="image side in pixels")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quality", type=int, default=90)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    s = a.size
    yy, xx = np.mgrid[0:s, 0:s]
    total = 0
    for c in range(a.classes):
        d = os.path.join(a.dir, "train", "class_%03d" % c)
        os.makedirs(d, exist_ok=True)
        base = rng.integers(40, 215, size=3)
        freq = 2 + c
        pattern = (np.sin(xx * freq * np.pi / s) * np.cos(yy * (c % 3 + 1) * np.pi / s) * 40)
        for i in range(a.per_class):
            noise = rng.normal(0, 25, size=(s, s, 3))
            img = np.clip(base + pattern[..., None] + noise, 0, 255).astype(np.uint8)
            path = os.path.join(d, "img_%05d.jpg" % (c * a.per_class + i))
            Image.fromarray(img).save(path, quality=a.quality)
            total += os.path.getsize(path)
    print("make_imagefolder: %d images in %d classes, %.1f MiB, in %s"
          % (a.classes * a.per_class, a.classes, total / 2**20, os.path.join(a.dir, "train")))


if __name__ == "__main__":
    main()
