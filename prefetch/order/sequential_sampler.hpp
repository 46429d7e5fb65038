// SequentialSampler: indices 0..N-1 every epoch, one consumer.
//
// torch.utils.data.SequentialSampler (DataLoader(shuffle=False)), and the
// sampler of any layout whose DatasetIndex is already in read order (the
// Keras listing up to 3.2). Immutable; thread-safe.
#pragma once

#include <numeric>
#include <string>

#include "prefetch/order/sampler.hpp"

namespace clairfs::prefetch {

class SequentialSampler final : public Sampler {
 public:
  explicit SequentialSampler(uint64_t dataset_size) : n_(dataset_size) {}

  uint64_t world_size() const override { return 1; }
  uint64_t dataset_size() const override { return n_; }

  Result<std::vector<Index>> Order(uint64_t rank, uint64_t epoch) const override {
    if (rank != 0) {
      return Status::InvalidArgument("SequentialSampler: rank " + std::to_string(rank) +
                                     " requested, but the sampler has a single consumer");
    }
    std::vector<Index> out(n_);
    std::iota(out.begin(), out.end(), Index{0});
    return out;
  }

 private:
  uint64_t n_;
};

}  // namespace clairfs::prefetch
