#include "prefetch/tf/tf_seed.hpp"

#include <vector>

#include "prefetch/rng/mt19937.hpp"

namespace clairfs::prefetch {

namespace {

// Python's `seed % _MAXINT32` (random_seed.py _truncate_seed).
int64_t Truncate(int64_t seed) {
  int64_t r = seed % kTfMaxInt32;
  return r < 0 ? r + kTfMaxInt32 : r;
}

}  // namespace

int64_t TfInternalOperationSeed(int64_t global_seed, uint64_t k) {
  // random.seed(int) keys init_by_array with abs(seed) cut into 32-bit words,
  // low word first; zero is the one-word key {0} (CPython _randommodule.c).
  uint64_t magnitude =
      global_seed < 0 ? 0 - static_cast<uint64_t>(global_seed) : static_cast<uint64_t>(global_seed);
  std::vector<uint32_t> key = {static_cast<uint32_t>(magnitude)};
  if ((magnitude >> 32) != 0) key.push_back(static_cast<uint32_t>(magnitude >> 32));
  Mt19937 mt;
  mt.SeedByArray(key.data(), key.size());
  // randint(0, 2^31-1) = _randbelow(2^31): getrandbits(32) until below 2^31.
  int64_t value = 0;
  for (uint64_t i = 0; i <= k; ++i) {
    uint32_t r;
    do {
      r = mt.Next();
    } while (r >= 0x80000000u);
    value = r;
  }
  return value;
}

Result<TfSeeds> TfGetSeed(const TfSeedInput& input) {
  TfSeeds seeds;
  if (input.global_seed) {
    int64_t op = input.op_seed ? *input.op_seed
                               : TfInternalOperationSeed(*input.global_seed, input.op_seed_draw);
    seeds = {Truncate(*input.global_seed), Truncate(op)};
  } else if (input.op_seed) {
    seeds = {kTfDefaultGraphSeed, Truncate(*input.op_seed)};
  } else {
    return Status::InvalidArgument(
        "no seed: TensorFlow would shuffle with a random seed; pass seed= to shuffle / "
        "list_files (--seed S), or call tf.random.set_seed(G) first (--global-seed G)");
  }
  if (seeds.seed == 0 && seeds.seed2 == 0) seeds.seed2 = kTfMaxInt32;
  return seeds;
}

}  // namespace clairfs::prefetch
