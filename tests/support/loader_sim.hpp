// LoaderSim: the order in which one rank's torch DataLoader opens the samples
// of an epoch - for tests and benchmarks of the planner, not the daemon.
//
// Batch j goes to worker j % W (restarting at worker 0 every epoch); the
// loader keeps W x prefetch_factor batches outstanding and hands out batch
// j + W x pf when the model takes batch j, which it does as soon as j is
// complete. Each step one worker that has work (chosen by a seeded generator,
// modelling uneven worker speed) opens the next sample of its oldest batch,
// so opens interleave across up to W batches and run up to W x pf batches
// ahead of the batch the model is on - the loader's real out-of-order
// pattern. W = 0 reads in order. Thread-compatible.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <random>
#include <vector>

#include "prefetch/order/loader_workers.hpp"

namespace clairfs::prefetch {

class LoaderSim {
 public:
  // One epoch of `samples` sampler positions; batch_size must be >= 1.
  LoaderSim(uint64_t samples, const LoaderShape& shape, uint64_t seed);

  // The sampler position of the next open; nullopt once the epoch is done.
  std::optional<uint64_t> Next();
  // Batches the model has taken so far.
  uint64_t consumed() const { return consumed_; }

 private:
  uint64_t BatchLength(uint64_t batch) const;
  void Consume();

  uint64_t samples_;
  LoaderShape shape_;
  uint64_t workers_;  // max(1, W)
  uint64_t batches_;
  std::vector<std::deque<uint64_t>> queue_;  // by worker: assigned batches
  std::vector<uint64_t> progress_;           // by worker: opens done in its oldest batch
  std::vector<uint8_t> complete_;            // by batch
  uint64_t consumed_ = 0;
  uint64_t assigned_ = 0;
  std::mt19937_64 rng_;
};

}  // namespace clairfs::prefetch
