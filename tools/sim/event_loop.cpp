#include "tools/sim/event_loop.hpp"

#include <algorithm>
#include <utility>

namespace clairfs::sim {

bool EventLoop::Later(const Event& a, const Event& b) {
  return a.at > b.at || (a.at == b.at && a.seq > b.seq);
}

void EventLoop::After(double delay, Fn fn) {
  heap_.push_back({now_ + std::max(delay, 0.0), seq_++, std::move(fn)});
  std::push_heap(heap_.begin(), heap_.end(), Later);
}

uint64_t EventLoop::Run() {
  uint64_t ran = 0;
  while (!heap_.empty()) {
    std::pop_heap(heap_.begin(), heap_.end(), Later);
    Event e = std::move(heap_.back());
    heap_.pop_back();
    now_ = e.at;
    e.fn();
    ran++;
  }
  return ran;
}

}  // namespace clairfs::sim
