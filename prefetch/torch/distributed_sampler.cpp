#include "prefetch/torch/distributed_sampler.hpp"

#include <numeric>

namespace clairfs::prefetch {

Result<DistributedSampler> DistributedSampler::Create(uint64_t dataset_size,
                                                      const DistributedSamplerOptions& options) {
  if (options.num_replicas == 0) {
    return Status::InvalidArgument("DistributedSampler: num_replicas must be at least 1");
  }
  return DistributedSampler(dataset_size, options);
}

DistributedSampler::DistributedSampler(uint64_t n, const DistributedSamplerOptions& options)
    : n_(n), options_(options) {
  uint64_t r = options.num_replicas;
  // torch computes ceil((N - R) / R) in floating point for drop_last; for
  // N % R != 0 that is floor(N / R), including 0 when N < R.
  if (options.drop_last && n % r != 0) {
    num_samples_ = n / r;
  } else {
    num_samples_ = (n + r - 1) / r;
  }
}

std::vector<Index> DistributedSampler::EpochIndices(uint64_t epoch) const {
  std::vector<Index> indices;
  if (options_.shuffle) {
    uint64_t effective_epoch = options_.set_epoch_called ? epoch : 0;
    TorchGenerator gen(options_.seed + effective_epoch);  // wraps like the low 32 bits do
    indices = RandPerm(n_, gen, options_.torch_version);
  } else {
    indices.resize(n_);
    std::iota(indices.begin(), indices.end(), Index{0});
  }
  uint64_t total = num_samples_ * options_.num_replicas;
  if (total <= n_) {
    indices.resize(total);
  } else {
    // Padding repeats the list from its start, as often as needed (N < R).
    indices.reserve(total);
    for (uint64_t i = n_; i < total; ++i) indices.push_back(indices[i - n_]);
  }
  return indices;
}

namespace {
Status BadRank(uint64_t rank, uint64_t replicas) {
  return Status::InvalidArgument("DistributedSampler: rank " + std::to_string(rank) +
                                 " is not below num_replicas " + std::to_string(replicas));
}
}  // namespace

std::vector<Index> DistributedSampler::Stride(const std::vector<Index>& all, uint64_t rank) const {
  std::vector<Index> mine;
  mine.reserve(num_samples_);
  for (uint64_t i = rank; i < all.size(); i += options_.num_replicas) mine.push_back(all[i]);
  return mine;
}

Result<std::vector<Index>> DistributedSampler::Order(uint64_t rank, uint64_t epoch) const {
  if (rank >= options_.num_replicas) return BadRank(rank, options_.num_replicas);
  return Stride(EpochIndices(epoch), rank);
}

Result<std::vector<std::vector<Index>>> DistributedSampler::OrderRanks(
    const std::vector<uint64_t>& ranks, uint64_t epoch) const {
  for (uint64_t r : ranks) {
    if (r >= options_.num_replicas) return BadRank(r, options_.num_replicas);
  }
  std::vector<Index> all = EpochIndices(epoch);
  std::vector<std::vector<Index>> out;
  out.reserve(ranks.size());
  for (uint64_t r : ranks) out.push_back(Stride(all, r));
  return out;
}

std::vector<std::vector<Index>> DistributedSampler::OrderAllRanks(uint64_t epoch) const {
  std::vector<Index> all = EpochIndices(epoch);
  std::vector<std::vector<Index>> out(options_.num_replicas);
  for (auto& v : out) v.reserve(num_samples_);
  for (uint64_t i = 0; i < all.size(); ++i) out[i % options_.num_replicas].push_back(all[i]);
  return out;
}

}  // namespace clairfs::prefetch
