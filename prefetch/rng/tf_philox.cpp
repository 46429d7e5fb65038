#include "prefetch/rng/tf_philox.hpp"

namespace clairfs::prefetch {

namespace {
// Constants of tensorflow/core/lib/random/philox_random.h.
constexpr uint32_t kKeyRaise0 = 0x9E3779B9u;
constexpr uint32_t kKeyRaise1 = 0xBB67AE85u;
constexpr uint32_t kMultiplier0 = 0xD2511F53u;
constexpr uint32_t kMultiplier1 = 0xCD9E8D57u;
constexpr int kRounds = 10;

TfPhilox::Block Round(const TfPhilox::Block& c, const TfPhilox::Key& k) {
  uint64_t p0 = static_cast<uint64_t>(kMultiplier0) * c[0];
  uint64_t p1 = static_cast<uint64_t>(kMultiplier1) * c[2];
  return {static_cast<uint32_t>(p1 >> 32) ^ c[1] ^ k[0], static_cast<uint32_t>(p1),
          static_cast<uint32_t>(p0 >> 32) ^ c[3] ^ k[1], static_cast<uint32_t>(p0)};
}
}  // namespace

TfPhilox::TfPhilox(uint64_t seed_lo, uint64_t seed_hi) {
  key_ = {static_cast<uint32_t>(seed_lo), static_cast<uint32_t>(seed_lo >> 32)};
  counter_[2] = static_cast<uint32_t>(seed_hi);
  counter_[3] = static_cast<uint32_t>(seed_hi >> 32);
}

TfPhilox::Block TfPhilox::Compute(Block counter, Key key) {
  for (int r = 0; r < kRounds; ++r) {
    counter = Round(counter, key);
    key[0] += kKeyRaise0;
    key[1] += kKeyRaise1;
  }
  return counter;
}

TfPhilox::Block TfPhilox::Next() {
  Block out = Compute(counter_, key_);
  // 128-bit increment (PhiloxRandom::SkipOne).
  for (uint32_t& word : counter_) {
    if (++word != 0) break;
  }
  return out;
}

}  // namespace clairfs::prefetch
