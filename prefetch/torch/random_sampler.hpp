// TorchRandomSampler: torch.utils.data.RandomSampler(replacement=False) driven
// by an explicit, seeded torch.Generator, bit-exact.
//
// One generator lives across epochs, so epoch e's order depends on every draw
// before it. Per epoch the sampler yields num_samples // N full randperm(N)
// and then slices a further randperm(N) to num_samples % N elements; with the
// default num_samples = N that last permutation is drawn and thrown away, which
// shifts the next epoch. A DataLoader holding the same generator
// (DataLoader(shuffle=True, generator=g)) also draws one random64 for its
// worker base seed whenever it creates an iterator, before the sampler runs.
// Order(0, e) replays the generator from the seed, skipping earlier epochs'
// draws. Immutable after Create; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "base/status.hpp"
#include "prefetch/order/sampler.hpp"
#include "prefetch/rng/torch_random.hpp"

namespace clairfs::prefetch {

// When the DataLoader draws its base seed from the sampler's generator.
enum class LoaderSeedDraw {
  kNone,        // the loader has no generator or another one (default)
  kEveryEpoch,  // DataLoader(..., generator=g): one random64 per iterator
  kFirstEpoch,  // same, with persistent_workers=True and num_workers > 0:
                // the iterator is created once and only reset afterwards
};

struct RandomSamplerOptions {
  uint64_t generator_seed = 0;          // g.manual_seed(value), two's complement of the Python int
  std::optional<uint64_t> num_samples;  // default: the dataset size
  LoaderSeedDraw loader_draw = LoaderSeedDraw::kNone;
  TorchVersion torch_version{};  // default 1.13
};

class TorchRandomSampler final : public Sampler {
 public:
  // InvalidArgument when the dataset is empty (torch raises ValueError) or
  // num_samples is 0.
  static Result<TorchRandomSampler> Create(uint64_t dataset_size,
                                           const RandomSamplerOptions& options);

  uint64_t world_size() const override { return 1; }
  uint64_t dataset_size() const override { return n_; }
  uint64_t num_samples() const { return num_samples_; }

  // Epoch 0 is the first pass after the generator was seeded.
  Result<std::vector<Index>> Order(uint64_t rank, uint64_t epoch) const override;

 private:
  TorchRandomSampler(uint64_t n, const RandomSamplerOptions& options);
  // Engine outputs consumed by one epoch, loader draw excluded.
  uint64_t SamplerDrawsPerEpoch() const;

  uint64_t n_;
  RandomSamplerOptions options_;
  uint64_t num_samples_;
};

}  // namespace clairfs::prefetch
