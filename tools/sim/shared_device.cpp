#include "tools/sim/shared_device.hpp"

#include <algorithm>
#include <utility>
#include <vector>

namespace clairfs::sim {

double SharedDevice::Demand(uint64_t bytes) const {
  const double by_bytes = spec_.bandwidth > 0 ? static_cast<double>(bytes) / spec_.bandwidth : 0;
  const double by_ops = spec_.iops > 0 ? 1 / spec_.iops : 0;
  return std::max(by_bytes, by_ops);
}

void SharedDevice::Transfer(uint64_t bytes, EventLoop::Fn done) {
  const double wait =
      spec_.latency + spec_.latency_per_request * static_cast<double>(finishing_.size());
  loop_->After(wait,
               [this, bytes, done = std::move(done)]() mutable { Join(bytes, std::move(done)); });
}

void SharedDevice::Advance() {
  const double elapsed = loop_->now() - updated_;
  if (!finishing_.empty() && elapsed > 0) {
    attained_ += elapsed / static_cast<double>(finishing_.size());
    counters_.busy_seconds += elapsed;
  }
  updated_ = loop_->now();
}

void SharedDevice::Join(uint64_t bytes, EventLoop::Fn done) {
  Advance();
  finishing_.emplace(attained_ + Demand(bytes), Request{bytes, std::move(done)});
  counters_.peak_in_progress =
      std::max(counters_.peak_in_progress, static_cast<uint32_t>(finishing_.size()));
  Reschedule();
}

void SharedDevice::Reschedule() {
  const uint64_t generation = ++generation_;
  if (finishing_.empty()) return;
  const double left = std::max(finishing_.begin()->first - attained_, 0.0);
  loop_->After(left * static_cast<double>(finishing_.size()),
               [this, generation] { Complete(generation); });
}

void SharedDevice::Complete(uint64_t generation) {
  if (generation != generation_) return;  // the set of requests changed since
  Advance();
  // Everything due by now, with room for the rounding of the divisions above.
  const double due = attained_ + 1e-12 * std::max(1.0, attained_);
  std::vector<Request> finished;
  while (!finishing_.empty() && finishing_.begin()->first <= due) {
    finished.push_back(std::move(finishing_.begin()->second));
    finishing_.erase(finishing_.begin());
  }
  Reschedule();
  for (Request& r : finished) {
    counters_.requests++;
    counters_.bytes += r.bytes;
    r.done();
  }
}

}  // namespace clairfs::sim
