// EventLoop: the simulator's clock. A callback runs at a simulated time (in
// seconds); callbacks due at the same time run in the order they were
// scheduled, so a run is the same every time. Single-thread.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace clairfs::sim {

class EventLoop {
 public:
  using Fn = std::function<void()>;

  double now() const { return now_; }
  // Runs `fn` at now() + delay (a negative delay counts as 0).
  void After(double delay, Fn fn);
  // Runs events in time order until none is left; returns how many ran.
  uint64_t Run();
  size_t pending() const { return heap_.size(); }

 private:
  struct Event {
    double at;
    uint64_t seq;
    Fn fn;
  };
  // Heap order: the earliest event, then the first scheduled, on top.
  static bool Later(const Event& a, const Event& b);

  std::vector<Event> heap_;
  double now_ = 0;
  uint64_t seq_ = 0;
};

}  // namespace clairfs::sim
