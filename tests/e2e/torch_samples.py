"""Checks the per-sample log of scripts/train.py (--sample-log) against the
source ImageFolder: every logged sample's hash must be that of its source file.

usage: torch_samples.py LOG_PREFIX DATA_ROOT
Prints one JSON object: {"samples": total, "per_rank": {rank: count}}; exits 1
on the first sample whose bytes differ from the source.
"""
import glob
import hashlib
import json
import sys

from torchvision import datasets


def main():
    prefix, root = sys.argv[1], sys.argv[2]
    source = datasets.ImageFolder(root).samples
    digests = {}
    per_rank = {}
    for log in sorted(glob.glob(prefix + ".rank*")):
        rank = int(log.rsplit("rank", 1)[1])
        per_rank[rank] = 0
        for line in open(log):
            _, index, digest = line.split()
            path = source[int(index)][0]
            if path not in digests:
                digests[path] = hashlib.blake2b(open(path, "rb").read(), digest_size=8).hexdigest()
            if digest != digests[path]:
                sys.exit("sample %s (%s) differs from the source" % (index, path))
            per_rank[rank] += 1
    print(json.dumps({"samples": sum(per_rank.values()), "per_rank": per_rank,
                      "dataset": len(source)}))


if __name__ == "__main__":
    main()
