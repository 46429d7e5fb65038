// EventLoop: the simulator's clock. A callback runs at a simulated time (in
// seconds); callbacks due at the same time run in the order they were
// scheduled, so a run is the same every time. An event not run yet can be
// cancelled. Single-thread.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace clairfs::sim {

class EventLoop {
 public:
  using Fn = std::function<void()>;
  // Names a scheduled event for Cancel.
  struct EventId {
    uint32_t slot = 0;
    uint64_t seq = UINT64_MAX;  // none
  };

  double now() const { return now_; }
  // Runs `fn` at now() + delay (a negative delay counts as 0).
  void After(double delay, Fn fn) { Schedule(delay, std::move(fn)); }
  // As After, and names the event.
  EventId Schedule(double delay, Fn fn);
  // The event will not run (nothing if it ran or was cancelled already).
  // The others keep their order: it is by time, then by scheduling.
  void Cancel(EventId id);
  // Runs events in time order until none is left; returns how many ran.
  uint64_t Run();
  size_t pending() const { return heap_.size(); }

 private:
  // The heap holds small plain entries; the callbacks stay in their slots
  // while the heap reorders, and a slot is reused once its event is gone.
  struct Event {
    double at;
    uint64_t seq;
    uint32_t slot;  // in fns_ and at_
  };
  // Heap order: the earliest event, then the first scheduled, on top.
  static bool Before(const Event& a, const Event& b) {
    return a.at < b.at || (a.at == b.at && a.seq < b.seq);
  }
  void Place(size_t i, const Event& e);
  void SiftUp(size_t i, Event e);
  void SiftDown(size_t i, Event e);
  // Takes heap_[i] out; its slot is freed.
  void Remove(size_t i);

  std::vector<Event> heap_;
  std::vector<Fn> fns_;         // by slot
  std::vector<uint32_t> at_;    // by slot: its event's index in heap_
  std::vector<uint32_t> free_;  // slots of events that ran or were cancelled
  double now_ = 0;
  uint64_t seq_ = 0;
};

}  // namespace clairfs::sim
