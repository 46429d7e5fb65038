// PyTorch's CPU random number generator and torch.randperm, bit-exact.
//
// TorchGenerator mirrors at::CPUGeneratorImpl as far as samplers use it:
// manual_seed keeps only the low 32 bits of the 64-bit seed, random() is one
// MT19937 output and random64() joins two outputs, the first one high.
// RandPerm reproduces torch.randperm(n, generator=g) on the CPU; which
// algorithm runs depends on n and on the torch version (see RandPermUsesInsideOut).
// TorchGenerator is a value type and thread-compatible; the free functions are
// thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.hpp"
#include "prefetch/order/sampler.hpp"
#include "prefetch/rng/mt19937.hpp"

namespace clairfs::prefetch {

// A PyTorch release, compared by (major, minor); patch and local tags ignored.
struct TorchVersion {
  int major = 1;
  int minor = 13;

  // Accepts "1.13", "2.7.0", "2.7.0+cu121", "1.13.0a0".
  static Result<TorchVersion> Parse(std::string_view text);
  std::string ToString() const;
  auto operator<=>(const TorchVersion&) const = default;
};

class TorchGenerator {
 public:
  // torch's default_rng_seed_val.
  static constexpr uint64_t kDefaultSeed = 67280421310721ull;

  explicit TorchGenerator(uint64_t seed = kDefaultSeed) { ManualSeed(seed); }

  // Generator.manual_seed(seed): only the low 32 bits reach the engine. A
  // negative Python seed arrives here as its two's complement.
  void ManualSeed(uint64_t seed) { engine_.Seed(static_cast<uint32_t>(seed)); }

  uint32_t Random() { return engine_.Next(); }
  uint64_t Random64() {
    uint64_t high = engine_.Next();
    uint64_t low = engine_.Next();
    return (high << 32) | low;
  }
  // Skips `count` 32-bit outputs (random() calls).
  void Discard(uint64_t count) { engine_.Discard(count); }

 private:
  Mt19937 engine_;
};

// Sizes from this one on use the newer "inside-out" shuffle in torch >= 2.7
// (uint32 max / 20, rounded down).
inline constexpr uint64_t kRandPermInsideOutMinSize = 214748364ull;
inline constexpr TorchVersion kRandPermInsideOutSince{2, 7};

// True when torch.randperm(n) of `version` uses the inside-out algorithm
// (random64() per element) instead of the swap shuffle (random() per element).
bool RandPermUsesInsideOut(uint64_t n, TorchVersion version);

// Number of 32-bit engine outputs one torch.randperm(n) consumes.
uint64_t RandPermDraws(uint64_t n, TorchVersion version);

// torch.randperm(n, generator=gen) as `version` computes it on the CPU.
std::vector<Index> RandPerm(uint64_t n, TorchGenerator& gen, TorchVersion version);

// The two algorithms by name, for tests of the one the installed torch lacks.
std::vector<Index> RandPermSwap(uint64_t n, TorchGenerator& gen);
std::vector<Index> RandPermInsideOut(uint64_t n, TorchGenerator& gen);

}  // namespace clairfs::prefetch
