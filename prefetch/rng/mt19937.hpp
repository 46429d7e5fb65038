// Mt19937: the 32-bit Mersenne Twister (Matsumoto & Nishimura, 1998).
//
// Both PyTorch's CPU generator and NumPy's legacy RandomState are this engine
// seeded with the reference init_genrand recurrence, so one implementation
// serves both; its output sequence equals std::mt19937 seeded with the same
// 32-bit value. Value type; thread-compatible (no shared state).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace clairfs::prefetch {

class Mt19937 {
 public:
  static constexpr size_t kStateWords = 624;
  static constexpr uint32_t kDefaultSeed = 5489;

  explicit Mt19937(uint32_t seed = kDefaultSeed) { Seed(seed); }

  // Re-initialises the state from a 32-bit seed (init_genrand).
  void Seed(uint32_t seed);

  // Re-initialises the state from a key of 32-bit words (init_by_array; what
  // Python's random.seed(int) uses, with the integer's words low first).
  void SeedByArray(const uint32_t* key, size_t length);

  // The next tempered 32-bit output.
  uint32_t Next() {
    if (pos_ >= kStateWords) Twist();
    return Temper(state_[pos_++]);
  }

  // Advances by `count` outputs without tempering them.
  void Discard(uint64_t count);

 private:
  void Twist();
  static uint32_t Temper(uint32_t y) {
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= y >> 18;
    return y;
  }

  std::array<uint32_t, kStateWords> state_{};
  size_t pos_ = kStateWords;
};

}  // namespace clairfs::prefetch
