#include "prefetch/torch/random_sampler.hpp"

namespace clairfs::prefetch {

namespace {
constexpr uint64_t kLoaderSeedDraws = 2;  // one random64
}

Result<TorchRandomSampler> TorchRandomSampler::Create(uint64_t dataset_size,
                                                      const RandomSamplerOptions& options) {
  if (dataset_size == 0) {
    return Status::InvalidArgument("RandomSampler: the dataset is empty");
  }
  if (options.num_samples && *options.num_samples == 0) {
    return Status::InvalidArgument("RandomSampler: num_samples must be positive");
  }
  return TorchRandomSampler(dataset_size, options);
}

TorchRandomSampler::TorchRandomSampler(uint64_t n, const RandomSamplerOptions& options)
    : n_(n), options_(options), num_samples_(options.num_samples.value_or(n)) {}

uint64_t TorchRandomSampler::SamplerDrawsPerEpoch() const {
  uint64_t perms = num_samples_ / n_ + 1;  // the final, sliced one is always drawn
  return perms * RandPermDraws(n_, options_.torch_version);
}

Result<std::vector<Index>> TorchRandomSampler::Order(uint64_t rank, uint64_t epoch) const {
  if (rank != 0) {
    return Status::InvalidArgument("RandomSampler: rank " + std::to_string(rank) +
                                   " requested, but the sampler has a single consumer");
  }
  TorchGenerator gen(options_.generator_seed);
  uint64_t skip = epoch * SamplerDrawsPerEpoch();
  if (options_.loader_draw == LoaderSeedDraw::kEveryEpoch) skip += epoch * kLoaderSeedDraws;
  if (options_.loader_draw == LoaderSeedDraw::kFirstEpoch && epoch > 0) skip += kLoaderSeedDraws;
  gen.Discard(skip);
  bool draw_now = options_.loader_draw == LoaderSeedDraw::kEveryEpoch ||
                  (options_.loader_draw == LoaderSeedDraw::kFirstEpoch && epoch == 0);
  if (draw_now) gen.Discard(kLoaderSeedDraws);

  std::vector<Index> out;
  out.reserve(num_samples_);
  for (uint64_t k = 0; k < num_samples_ / n_; ++k) {
    std::vector<Index> perm = RandPerm(n_, gen, options_.torch_version);
    out.insert(out.end(), perm.begin(), perm.end());
  }
  uint64_t tail = num_samples_ % n_;
  if (tail > 0) {
    std::vector<Index> perm = RandPerm(n_, gen, options_.torch_version);
    out.insert(out.end(), perm.begin(), perm.begin() + static_cast<std::ptrdiff_t>(tail));
  }
  return out;
}

}  // namespace clairfs::prefetch
