#include "tests/support/loader_sim.hpp"

#include <algorithm>

namespace clairfs::prefetch {

LoaderSim::LoaderSim(uint64_t samples, const LoaderShape& shape, uint64_t seed)
    : samples_(samples),
      shape_(shape),
      workers_(std::max<uint64_t>(1, shape.num_workers)),
      batches_(BatchCount(samples, shape)),
      queue_(workers_),
      progress_(workers_, 0),
      complete_(batches_, 0),
      rng_(seed) {
  uint64_t in_flight = std::max<uint64_t>(1, BatchesInFlight(shape));
  while (assigned_ < batches_ && assigned_ < in_flight) {
    queue_[WorkerOfBatch(assigned_, shape_) % workers_].push_back(assigned_);
    ++assigned_;
  }
}

uint64_t LoaderSim::BatchLength(uint64_t batch) const {
  uint64_t start = batch * shape_.batch_size;
  return std::min(shape_.batch_size, samples_ - start);
}

void LoaderSim::Consume() {
  while (consumed_ < batches_ && complete_[consumed_]) {
    ++consumed_;
    if (assigned_ < batches_) {
      queue_[WorkerOfBatch(assigned_, shape_) % workers_].push_back(assigned_);
      ++assigned_;
    }
  }
}

std::optional<uint64_t> LoaderSim::Next() {
  Consume();
  std::vector<uint64_t> busy;
  for (uint64_t w = 0; w < workers_; ++w) {
    if (!queue_[w].empty()) busy.push_back(w);
  }
  if (busy.empty()) return std::nullopt;
  uint64_t w = busy[std::uniform_int_distribution<uint64_t>(0, busy.size() - 1)(rng_)];
  uint64_t batch = queue_[w].front();
  uint64_t position = batch * shape_.batch_size + progress_[w];
  if (++progress_[w] == BatchLength(batch)) {
    queue_[w].pop_front();
    progress_[w] = 0;
    complete_[batch] = 1;
  }
  return position;
}

}  // namespace clairfs::prefetch
