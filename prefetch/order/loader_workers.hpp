// How a torch DataLoader spreads one rank's sample order over its workers.
//
// The sampler's indices are cut into batches of batch_size (the last one
// short unless drop_last); batch j of an epoch goes to worker j % W, starting
// again at worker 0 every epoch; with W = 0 the main process loads
// everything. The loader keeps W x prefetch_factor batches in flight, so opens
// run up to that many batches ahead of the batch the model consumes.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>

namespace clairfs::prefetch {

struct LoaderShape {
  uint64_t batch_size = 1;       // DataLoader's default
  uint64_t num_workers = 0;      // 0: loading in the main process
  uint64_t prefetch_factor = 2;  // batches in flight per worker
  bool drop_last = false;        // drop the short last batch
};

// Batches one epoch of `samples` sampler indices yields.
inline uint64_t BatchCount(uint64_t samples, const LoaderShape& shape) {
  if (shape.batch_size == 0) return 0;
  return shape.drop_last ? samples / shape.batch_size
                         : (samples + shape.batch_size - 1) / shape.batch_size;
}

// The worker that loads batch `batch` (0 = main process when num_workers is 0).
inline uint64_t WorkerOfBatch(uint64_t batch, const LoaderShape& shape) {
  return shape.num_workers == 0 ? 0 : batch % shape.num_workers;
}

// The worker that opens the sample at `position` of the epoch's sampler order.
inline uint64_t WorkerOfPosition(uint64_t position, const LoaderShape& shape) {
  return shape.batch_size == 0 ? 0 : WorkerOfBatch(position / shape.batch_size, shape);
}

// Batches the loader may have requested beyond the one being consumed.
inline uint64_t BatchesInFlight(const LoaderShape& shape) {
  return shape.num_workers == 0 ? 0 : shape.num_workers * shape.prefetch_factor;
}

}  // namespace clairfs::prefetch
