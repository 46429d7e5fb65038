#!/usr/bin/python3
"""Writes tests/prefetch/vectors.inc: expected orders computed by the real
libraries (Debian's python3-torch and python3-numpy), for the unit tests.

Run with the interpreter that has them:  /usr/bin/python3 make_vectors.py > vectors.inc
The output is C++ aggregate initialisers; see vectors.hpp for the structs.
"""
import sys

import numpy as np
import torch
from torch.utils.data import DataLoader, DistributedSampler, RandomSampler

MASK64 = (1 << 64) - 1


def arr(xs):
    return "{" + ",".join(str(int(x)) for x in xs) + "}"


def seed_literal(seed):
    # Python seeds may be negative; C++ receives their 64-bit two's complement.
    return "%du" % (seed & MASK64) if seed >= 0 else "static_cast<uint64_t>(%dll)" % seed


def checksum(perm):
    total = 0
    for i, v in enumerate(perm):
        total = (total + (i + 1) * (int(v) + 1)) & MASK64
    return total


class Indexable:
    """Stands in for a dataset: only len() matters to the samplers."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return i


def randperm_vectors(out):
    out.append("inline const std::vector<RandPermVector> kRandPermVectors = {")
    seeds = [0, 1, 42, 2**31 - 1, 2**32 - 1, 2**32 + 5, 2**40 + 3, 2**63 + 11, 2**64 - 1]
    for seed in seeds:
        for n in (0, 1, 2, 3, 5, 10, 17, 64, 100, 257):
            g = torch.Generator()
            g.manual_seed(seed)
            # Three permutations from one generator check the draws each consumes.
            perms = [torch.randperm(n, generator=g).tolist() for _ in range(3)]
            out.append("  {%s, %d, {%s}}," % (seed_literal(seed), n, ",".join(arr(p) for p in perms)))
    out.append("};")

    out.append("inline const std::vector<RandPermDigest> kRandPermDigests = {")
    for seed, n in ((7, 65537), (123456789, 1000003), (2**32 + 9, 300000)):
        g = torch.Generator()
        g.manual_seed(seed)
        p = torch.randperm(n, generator=g).tolist()
        out.append("  {%s, %d, %s, %s, %du}," % (seed_literal(seed), n, arr(p[:16]), arr(p[-16:]),
                                               checksum(p)))
    out.append("};")


def distributed_vectors(out):
    out.append("inline const std::vector<DistributedVector> kDistributedVectors = {")
    combos = []
    for n in (1, 2, 7, 10, 13, 31, 64):
        for r in (1, 2, 3, 4, 8, 20):
            combos.append((n, r))
    seeds = [0, 17, 2**32 - 1, 2**32 + 3, 2**63, -5]
    k = 0
    for n, r in combos:
        for drop_last in (False, True):
            shuffle = (k % 7) != 6
            seed = seeds[k % len(seeds)]
            epoch = [0, 1, 2, 5, 1000][k % 5]
            k += 1
            ds = Indexable(n)
            ranks = []
            for rank in range(r):
                s = DistributedSampler(ds, num_replicas=r, rank=rank, shuffle=shuffle, seed=seed,
                                       drop_last=drop_last)
                s.set_epoch(epoch)
                ranks.append(list(s))
            out.append("  {%d, %d, %s, %d, %s, %s, {%s}}," % (
                n, r, seed_literal(seed), epoch, str(drop_last).lower(), str(shuffle).lower(),
                ",".join(arr(x) for x in ranks)))
    out.append("};")


def random_sampler_vectors(out):
    out.append("inline const std::vector<RandomSamplerVector> kRandomSamplerVectors = {")
    epochs = 4
    cases = [(1, 0, None), (2, 5, None), (10, 0, None), (10, 2**32 + 1, None), (37, 99, None),
             (10, 3, 25), (10, 4, 7), (5, 8, 5)]
    for n, seed, num_samples in cases:
        g = torch.Generator()
        g.manual_seed(seed)
        s = RandomSampler(Indexable(n), generator=g, num_samples=num_samples)
        orders = [list(s) for _ in range(epochs)]
        out.append("  {%d, %s, %d, 0, {%s}}," % (n, seed_literal(seed), num_samples or 0,
                                                 ",".join(arr(o) for o in orders)))
    # DataLoader(shuffle=True, generator=g) also draws its base seed from g.
    for n, seed, workers, persistent in ((10, 0, 0, False), (23, 7, 0, False), (23, 7, 2, True),
                                         (12, 3, 2, False)):
        g = torch.Generator()
        g.manual_seed(seed)
        loader = DataLoader(list(range(n)), batch_size=4, shuffle=True, generator=g,
                            num_workers=workers, persistent_workers=persistent)
        orders = [[int(i) for batch in loader for i in batch] for _ in range(epochs)]
        mode = 2 if persistent else 1
        out.append("  {%d, %s, 0, %d, {%s}}," % (n, seed_literal(seed), mode,
                                                 ",".join(arr(o) for o in orders)))
    out.append("};")


def numpy_vectors(out):
    out.append("inline const std::vector<NumpyVector> kNumpyVectors = {")
    for seed in (0, 1, 1337, 123456, 2**31, 2**32 - 1):
        for n in (0, 1, 2, 3, 8, 9, 33, 100, 513):
            perm = np.random.RandomState(seed).permutation(n).tolist()
            lst = list(range(n))
            np.random.RandomState(seed).shuffle(lst)  # the untyped list path Keras uses
            out.append("  {%du, %d, %s, %s}," % (seed, n, arr(perm), arr(lst)))
    out.append("};")


def main():
    out = ["// Generated by tests/prefetch/make_vectors.py with torch %s and numpy %s."
           % (torch.__version__, np.__version__),
           "// Do not edit; regenerate instead."]
    randperm_vectors(out)
    distributed_vectors(out)
    random_sampler_vectors(out)
    numpy_vectors(out)
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
