#include "prefetch/rng/mt19937.hpp"

namespace clairfs::prefetch {

namespace {
constexpr size_t kShift = 397;  // the "middle word" offset m of MT19937
constexpr uint32_t kMatrixA = 0x9908b0dfu;
constexpr uint32_t kUpperBit = 0x80000000u;
constexpr uint32_t kLowerBits = 0x7fffffffu;

uint32_t Mix(uint32_t upper_from, uint32_t lower_from, uint32_t shifted) {
  uint32_t y = (upper_from & kUpperBit) | (lower_from & kLowerBits);
  uint32_t v = shifted ^ (y >> 1);
  if (y & 1u) v ^= kMatrixA;
  return v;
}
}  // namespace

void Mt19937::Seed(uint32_t seed) {
  state_[0] = seed;
  for (size_t i = 1; i < kStateWords; ++i) {
    uint32_t prev = state_[i - 1];
    state_[i] = 1812433253u * (prev ^ (prev >> 30)) + static_cast<uint32_t>(i);
  }
  pos_ = kStateWords;  // the first Next() twists, as the reference code does
}

void Mt19937::SeedByArray(const uint32_t* key, size_t length) {
  Seed(19650218u);
  size_t i = 1;
  size_t j = 0;
  for (size_t k = kStateWords > length ? kStateWords : length; k > 0; --k) {
    uint32_t prev = state_[i - 1];
    state_[i] =
        (state_[i] ^ ((prev ^ (prev >> 30)) * 1664525u)) + key[j] + static_cast<uint32_t>(j);
    if (++i >= kStateWords) {
      state_[0] = state_[kStateWords - 1];
      i = 1;
    }
    if (++j >= length) j = 0;
  }
  for (size_t k = kStateWords - 1; k > 0; --k) {
    uint32_t prev = state_[i - 1];
    state_[i] = (state_[i] ^ ((prev ^ (prev >> 30)) * 1566083941u)) - static_cast<uint32_t>(i);
    if (++i >= kStateWords) {
      state_[0] = state_[kStateWords - 1];
      i = 1;
    }
  }
  state_[0] = 0x80000000u;
  pos_ = kStateWords;
}

void Mt19937::Twist() {
  for (size_t i = 0; i < kStateWords; ++i) {
    size_t next = (i + 1) % kStateWords;
    size_t far = (i + kShift) % kStateWords;
    state_[i] = Mix(state_[i], state_[next], state_[far]);
  }
  pos_ = 0;
}

void Mt19937::Discard(uint64_t count) {
  while (count > 0) {
    if (pos_ >= kStateWords) Twist();
    uint64_t left = kStateWords - pos_;
    uint64_t step = count < left ? count : left;
    pos_ += static_cast<size_t>(step);
    count -= step;
  }
}

}  // namespace clairfs::prefetch
