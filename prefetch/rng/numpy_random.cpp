#include "prefetch/rng/numpy_random.hpp"

#include <numeric>

namespace clairfs::prefetch {

uint64_t NumpyRandomState::RandomInterval(uint64_t max) {
  if (max == 0) return 0;
  uint64_t mask = max;
  mask |= mask >> 1;
  mask |= mask >> 2;
  mask |= mask >> 4;
  mask |= mask >> 8;
  mask |= mask >> 16;
  mask |= mask >> 32;
  uint64_t value;
  // NumPy only spends 64-bit draws when the bound needs them.
  if (max <= 0xffffffffull) {
    do {
      value = NextUint32() & mask;
    } while (value > max);
  } else {
    do {
      value = NextUint64() & mask;
    } while (value > max);
  }
  return value;
}

std::vector<Index> NumpyRandomState::Permutation(uint64_t n) {
  std::vector<Index> a(n);
  std::iota(a.begin(), a.end(), Index{0});
  Shuffle(a);
  return a;
}

}  // namespace clairfs::prefetch
