// DistributedSampler: torch.utils.data.DistributedSampler, bit-exact.
//
// Per epoch: a fresh torch generator seeded with seed + epoch (only the low 32
// bits count), randperm(N) (or 0..N-1 without shuffle), padded cyclically from
// its start or cut so that every rank gets the same count, then rank r takes
// positions r, r+R, r+2R, ... The logic is the same in torch 1.13 and 2.x; the
// torch version only selects the randperm algorithm for huge N.
// Immutable after Create; thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.hpp"
#include "prefetch/order/sampler.hpp"
#include "prefetch/rng/torch_random.hpp"

namespace clairfs::prefetch {

struct DistributedSamplerOptions {
  uint64_t num_replicas = 1;  // R, the world size; must be >= 1
  // The Python `seed` argument as a 64-bit two's complement value (default 0).
  uint64_t seed = 0;
  bool shuffle = true;     // default true
  bool drop_last = false;  // default false: pad instead of dropping
  // False models a script that never calls set_epoch(): every epoch then
  // repeats epoch 0's order. Default true.
  bool set_epoch_called = true;
  TorchVersion torch_version{};  // default 1.13
};

class DistributedSampler final : public Sampler {
 public:
  // InvalidArgument when num_replicas is 0.
  static Result<DistributedSampler> Create(uint64_t dataset_size,
                                           const DistributedSamplerOptions& options);

  uint64_t world_size() const override { return options_.num_replicas; }
  uint64_t dataset_size() const override { return n_; }
  // Samples each rank reads per epoch (the sampler's num_samples).
  uint64_t num_samples() const { return num_samples_; }

  Result<std::vector<Index>> Order(uint64_t rank, uint64_t epoch) const override;
  // One randperm for all the requested ranks.
  Result<std::vector<std::vector<Index>>> OrderRanks(const std::vector<uint64_t>& ranks,
                                                     uint64_t epoch) const override;

  // All ranks of one epoch at once (one randperm instead of R); element r is
  // what Order(r, epoch) returns.
  std::vector<std::vector<Index>> OrderAllRanks(uint64_t epoch) const;

 private:
  DistributedSampler(uint64_t n, const DistributedSamplerOptions& options);
  // The padded or cut index list of length num_samples * R for `epoch`.
  std::vector<Index> EpochIndices(uint64_t epoch) const;
  // Positions rank, rank + R, rank + 2R, ... of `all`.
  std::vector<Index> Stride(const std::vector<Index>& all, uint64_t rank) const;

  uint64_t n_;
  DistributedSamplerOptions options_;
  uint64_t num_samples_;
};

}  // namespace clairfs::prefetch
