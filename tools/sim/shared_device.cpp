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

void SharedDevice::Transfer(uint64_t bytes, EventLoop::Fn done, int client) {
  const double wait =
      spec_.latency + spec_.latency_per_request * static_cast<double>(requests_.size());
  loop_->After(wait, [this, bytes, client, done = std::move(done)]() mutable {
    Join(bytes, std::move(done), client);
  });
}

void SharedDevice::CountBusy() {
  if (!requests_.empty()) counters_.busy_seconds += loop_->now() - busy_since_;
  busy_since_ = loop_->now();
}

void SharedDevice::Advance(Lane* lane) {
  const double elapsed = loop_->now() - lane->updated;
  if (!lane->finishing.empty() && elapsed > 0) {
    lane->attained += elapsed / static_cast<double>(lane->finishing.size());
  }
  lane->updated = loop_->now();
}

void SharedDevice::Join(uint64_t bytes, EventLoop::Fn done, int client) {
  CountBusy();
  const double by_bytes = spec_.bandwidth > 0 ? static_cast<double>(bytes) / spec_.bandwidth : 0;
  const double by_ops = spec_.iops > 0 ? 1 / spec_.iops : 0;
  const uint64_t id = next_id_++;
  Request& r = requests_[id];
  r.bytes = bytes;
  r.done = std::move(done);
  r.lanes_left = 0;
  Lane* own = client >= 0 && spec_.client_bandwidth > 0 ? &clients_[client] : nullptr;
  const double by_client = own != nullptr ? static_cast<double>(bytes) / spec_.client_bandwidth : 0;
  for (auto [lane, demand] :
       {std::pair{&bytes_, by_bytes}, std::pair{&ops_, by_ops}, std::pair{own, by_client}}) {
    if (demand <= 0) continue;
    Advance(lane);
    lane->finishing.emplace(lane->attained + demand, id);
    r.lanes_left++;
    Reschedule(lane);
  }
  counters_.peak_in_progress =
      std::max(counters_.peak_in_progress, static_cast<uint32_t>(requests_.size()));
  if (r.lanes_left == 0) {  // nothing to move: done as it arrives
    std::vector<EventLoop::Fn> finished;
    r.lanes_left = 1;
    Served(id, &finished);
    for (auto& f : finished) f();
  }
}

void SharedDevice::Reschedule(Lane* lane) {
  const uint64_t generation = ++lane->generation;
  if (lane->finishing.empty()) return;
  const double left = std::max(lane->finishing.begin()->first - lane->attained, 0.0);
  loop_->After(left * static_cast<double>(lane->finishing.size()),
               [this, lane, generation] { Complete(lane, generation); });
}

void SharedDevice::Served(uint64_t id, std::vector<EventLoop::Fn>* done) {
  auto it = requests_.find(id);
  if (--it->second.lanes_left > 0) return;
  CountBusy();
  counters_.requests++;
  counters_.bytes += it->second.bytes;
  done->push_back(std::move(it->second.done));
  requests_.erase(it);
}

void SharedDevice::Complete(Lane* lane, uint64_t generation) {
  if (generation != lane->generation) return;  // the set of requests changed since
  Advance(lane);
  // Everything due by now, with room for the rounding of the divisions above.
  const double due = lane->attained + 1e-12 * std::max(1.0, lane->attained);
  std::vector<EventLoop::Fn> finished;
  while (!lane->finishing.empty() && lane->finishing.begin()->first <= due) {
    Served(lane->finishing.begin()->second, &finished);
    lane->finishing.erase(lane->finishing.begin());
  }
  Reschedule(lane);
  for (auto& f : finished) f();
}

}  // namespace clairfs::sim
