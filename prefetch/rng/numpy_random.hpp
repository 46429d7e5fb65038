// NumpyRandomState: the parts of numpy.random.RandomState (legacy MT19937)
// that dataset listings use, bit-exact with NumPy 1.x.
//
// RandomState(seed) for an integer seed in [0, 2^32) is MT19937 init_genrand.
// random_interval(max) draws from [0, max] by masking to the smallest all-ones
// value >= max and rejecting larger values; shuffle walks i = n-1 .. 1 and
// swaps x[i] with x[random_interval(i)]. Value type; thread-compatible.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "prefetch/order/sampler.hpp"
#include "prefetch/rng/mt19937.hpp"

namespace clairfs::prefetch {

class NumpyRandomState {
 public:
  explicit NumpyRandomState(uint32_t seed) : engine_(seed) {}

  // np.random.seed(seed) for an int seed in [0, 2^32): init_genrand again.
  void Seed(uint32_t seed) { engine_.Seed(seed); }

  uint32_t NextUint32() { return engine_.Next(); }
  // Legacy next64: the first 32-bit output is the high half.
  uint64_t NextUint64() {
    uint64_t high = engine_.Next();
    return (high << 32) | engine_.Next();
  }

  // random_sample() / random(): legacy_double, a 53-bit double from two
  // 32-bit outputs, (a >> 5) * 2^26 + (b >> 6) over 2^53
  // (numpy/random/src/legacy/legacy-distributions.c, mt19937 next_double).
  // uniform(low, high) is low + (high - low) * NextDouble().
  double NextDouble() {
    uint32_t a = engine_.Next() >> 5;
    uint32_t b = engine_.Next() >> 6;
    return (a * 67108864.0 + b) / 9007199254740992.0;
  }

  // A value in [0, max], as NumPy's random_interval.
  uint64_t RandomInterval(uint64_t max);

  // rs.shuffle(x) for a list or a 1-D array.
  template <typename T>
  void Shuffle(std::vector<T>& x) {
    for (size_t i = x.size(); i-- > 1;) {
      size_t j = static_cast<size_t>(RandomInterval(i));
      std::swap(x[i], x[j]);
    }
  }

  // rs.permutation(n).
  std::vector<Index> Permutation(uint64_t n);

 private:
  Mt19937 engine_;
};

}  // namespace clairfs::prefetch
