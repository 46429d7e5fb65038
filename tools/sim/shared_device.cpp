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

bool SharedDevice::LaterFinish(const Finishing& a, const Finishing& b) {
  return a.at > b.at || (a.at == b.at && a.id > b.id);
}

void SharedDevice::Transfer(uint64_t bytes, EventLoop::Fn done, int client) {
  const double wait = spec_.latency + spec_.latency_per_request * static_cast<double>(live_);
  // The request waits in a slot of its own, so the event carries two words
  // (no allocation of its own).
  uint32_t slot;
  if (free_arriving_.empty()) {
    slot = static_cast<uint32_t>(arriving_.size());
    arriving_.push_back({bytes, std::move(done), client});
  } else {
    slot = free_arriving_.back();
    free_arriving_.pop_back();
    arriving_[slot] = {bytes, std::move(done), client};
  }
  loop_->After(wait, [this, slot] { Arrive(slot); });
}

void SharedDevice::Arrive(uint32_t slot) {
  Arriving& a = arriving_[slot];
  const uint64_t bytes = a.bytes;
  const int client = a.client;
  EventLoop::Fn done = std::move(a.done);
  free_arriving_.push_back(slot);
  Join(bytes, std::move(done), client);
}

void SharedDevice::CountBusy() {
  if (live_ != 0) counters_.busy_seconds += loop_->now() - busy_since_;
  busy_since_ = loop_->now();
}

void SharedDevice::Advance(Lane* lane) {
  const double elapsed = loop_->now() - lane->updated;
  if (!lane->finishing.empty() && elapsed > 0) {
    lane->attained += elapsed / static_cast<double>(lane->finishing.size());
  }
  lane->updated = loop_->now();
}

SharedDevice::Lane* SharedDevice::ClientLane(int client) {
  const size_t c = static_cast<size_t>(client);
  if (c >= clients_.size()) clients_.resize(c + 1);
  if (clients_[c] == nullptr) clients_[c] = std::make_unique<Lane>(this);
  return clients_[c].get();
}

void SharedDevice::Join(uint64_t bytes, EventLoop::Fn done, int client) {
  CountBusy();
  const double by_bytes = spec_.bandwidth > 0 ? static_cast<double>(bytes) / spec_.bandwidth : 0;
  const double by_ops = spec_.iops > 0 ? 1 / spec_.iops : 0;
  const uint64_t id = next_id_++;
  uint32_t slot;
  if (free_requests_.empty()) {
    slot = static_cast<uint32_t>(requests_.size());
    requests_.emplace_back();
  } else {
    slot = free_requests_.back();
    free_requests_.pop_back();
  }
  live_++;
  Request& r = requests_[slot];
  r.bytes = bytes;
  r.done = std::move(done);
  r.lanes_left = 0;
  Lane* own = client >= 0 && spec_.client_bandwidth > 0 ? ClientLane(client) : nullptr;
  const double by_client = own != nullptr ? static_cast<double>(bytes) / spec_.client_bandwidth : 0;
  for (auto [lane, demand] :
       {std::pair{&bytes_, by_bytes}, std::pair{&ops_, by_ops}, std::pair{own, by_client}}) {
    if (demand <= 0) continue;
    Advance(lane);
    lane->finishing.push_back({lane->attained + demand, id, slot});
    std::push_heap(lane->finishing.begin(), lane->finishing.end(), LaterFinish);
    r.lanes_left++;
    Reschedule(lane);
  }
  counters_.peak_in_progress = std::max(counters_.peak_in_progress, static_cast<uint32_t>(live_));
  if (r.lanes_left == 0) {  // nothing to move: done as it arrives
    std::vector<EventLoop::Fn> finished;
    r.lanes_left = 1;
    Served(slot, &finished);
    for (auto& f : finished) f();
  }
}

void SharedDevice::Reschedule(Lane* lane) {
  const uint64_t generation = ++lane->generation;
  // The earlier completion would find the requests changed and do nothing:
  // out of the loop, it does not crowd its queue.
  loop_->Cancel(lane->scheduled);
  lane->scheduled = {};
  if (lane->finishing.empty()) return;
  const double left = std::max(lane->finishing.front().at - lane->attained, 0.0);
  // Two words: the callback is kept without an allocation.
  lane->scheduled =
      loop_->Schedule(left * static_cast<double>(lane->finishing.size()),
                      [lane, generation] { lane->device->Complete(lane, generation); });
}

void SharedDevice::Served(uint32_t slot, std::vector<EventLoop::Fn>* done) {
  Request& r = requests_[slot];
  if (--r.lanes_left > 0) return;
  CountBusy();
  counters_.requests++;
  counters_.bytes += r.bytes;
  done->push_back(std::move(r.done));
  r.done = nullptr;
  free_requests_.push_back(slot);
  live_--;
}

void SharedDevice::Complete(Lane* lane, uint64_t generation) {
  if (generation != lane->generation) return;  // the set of requests changed since
  Advance(lane);
  // Everything due by now, with room for the rounding of the divisions above.
  const double due = lane->attained + 1e-12 * std::max(1.0, lane->attained);
  // The callbacks below may start transfers here; they only schedule events.
  std::vector<EventLoop::Fn> finished;
  finished.swap(finished_);
  while (!lane->finishing.empty() && lane->finishing.front().at <= due) {
    Served(lane->finishing.front().slot, &finished);
    std::pop_heap(lane->finishing.begin(), lane->finishing.end(), LaterFinish);
    lane->finishing.pop_back();
  }
  Reschedule(lane);
  for (auto& f : finished) f();
  finished.clear();
  finished_.swap(finished);
}

}  // namespace clairfs::sim
