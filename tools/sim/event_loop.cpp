#include "tools/sim/event_loop.hpp"

#include <algorithm>
#include <utility>

namespace clairfs::sim {

void EventLoop::Place(size_t i, const Event& e) {
  heap_[i] = e;
  at_[e.slot] = static_cast<uint32_t>(i);
}

void EventLoop::SiftUp(size_t i, Event e) {
  while (i > 0) {
    const size_t parent = (i - 1) / 2;
    if (!Before(e, heap_[parent])) break;
    Place(i, heap_[parent]);
    i = parent;
  }
  Place(i, e);
}

void EventLoop::SiftDown(size_t i, Event e) {
  const size_t n = heap_.size();
  for (;;) {
    size_t child = 2 * i + 1;
    if (child >= n) break;
    if (child + 1 < n && Before(heap_[child + 1], heap_[child])) child++;
    if (!Before(heap_[child], e)) break;
    Place(i, heap_[child]);
    i = child;
  }
  Place(i, e);
}

EventLoop::EventId EventLoop::Schedule(double delay, Fn fn) {
  uint32_t slot;
  if (free_.empty()) {
    slot = static_cast<uint32_t>(fns_.size());
    fns_.push_back(std::move(fn));
    at_.push_back(0);
  } else {
    slot = free_.back();
    free_.pop_back();
    fns_[slot] = std::move(fn);
  }
  const Event e{now_ + std::max(delay, 0.0), seq_++, slot};
  heap_.emplace_back();
  SiftUp(heap_.size() - 1, e);
  return {slot, e.seq};
}

void EventLoop::Remove(size_t i) {
  free_.push_back(heap_[i].slot);
  const Event last = heap_.back();
  heap_.pop_back();
  if (i == heap_.size()) return;
  // The last entry fills the hole, moving up or down as its key says.
  if (i > 0 && Before(last, heap_[(i - 1) / 2])) {
    SiftUp(i, last);
  } else {
    SiftDown(i, last);
  }
}

void EventLoop::Cancel(EventId id) {
  if (id.slot >= at_.size()) return;
  const size_t i = at_[id.slot];
  if (i >= heap_.size() || heap_[i].seq != id.seq) return;  // ran or cancelled
  fns_[id.slot] = nullptr;
  Remove(i);
}

uint64_t EventLoop::Run() {
  uint64_t ran = 0;
  while (!heap_.empty()) {
    const Event e = heap_.front();
    // Out of its slot before it runs: it may schedule more (and grow fns_).
    Fn fn = std::move(fns_[e.slot]);
    fns_[e.slot] = nullptr;
    Remove(0);
    now_ = e.at;
    fn();
    ran++;
  }
  return ran;
}

}  // namespace clairfs::sim
