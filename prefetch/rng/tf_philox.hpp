// TfPhilox: Philox4x32-10 exactly as TensorFlow's random::PhiloxRandom, and
// the one-word-at-a-time view of it that tf.data draws from.
//
// Rules taken from tensorflow/core/lib/random/philox_random.h (the same in TF
// 2.15 and 2.21): a 128-bit counter and a 64-bit key; PhiloxRandom(seed_lo,
// seed_hi) puts seed_lo into the key (low word first) and seed_hi into counter
// words 2-3, counter words 0-1 start at zero; each call runs ten rounds
// (multipliers 0xD2511F53 / 0xCD9E8D57, key raised by 0x9E3779B9 /
// 0xBB67AE85 between rounds) on the current counter, returns four 32-bit words
// and then increments the counter by one. SingleSampleAdapter
// (tensorflow/core/lib/random/random_distributions.h) hands those four words
// out one by one, in order, before calling the generator again.
// Value types; thread-compatible.
#pragma once

#include <array>
#include <cstdint>

namespace clairfs::prefetch {

class TfPhilox {
 public:
  using Block = std::array<uint32_t, 4>;
  using Key = std::array<uint32_t, 2>;

  // PhiloxRandom(seed_lo, seed_hi).
  TfPhilox(uint64_t seed_lo, uint64_t seed_hi);

  // The ten-round bijection of one counter under one key (Random123's
  // philox4x32-10; used for the known-answer tests).
  static Block Compute(Block counter, Key key);

  // operator(): the block of the current counter, then counter + 1.
  Block Next();

 private:
  Block counter_{};
  Key key_{};
};

// random::SingleSampleAdapter<PhiloxRandom>: one 32-bit word per call.
class TfPhiloxWords {
 public:
  TfPhiloxWords(uint64_t seed_lo, uint64_t seed_hi) : philox_(seed_lo, seed_hi) {}

  uint32_t Next() {
    if (used_ == 4) {
      block_ = philox_.Next();
      used_ = 0;
    }
    return block_[used_++];
  }

 private:
  TfPhilox philox_;
  TfPhilox::Block block_{};
  int used_ = 4;
};

}  // namespace clairfs::prefetch
