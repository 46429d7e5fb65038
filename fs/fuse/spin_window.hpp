// SpinWindow: how long the thread reading /dev/fuse keeps looking for the
// next request before it sleeps, adapted to the gaps it sees.
//
// A request that finds the thread awake is answered without waking a sleeping
// CPU, which on a VM costs more than the rest of the round trip
// (docs/benchmarks.md), but every microsecond spent looking is CPU taken from
// the job. So the window follows the traffic, the way the kernel's haltpoll
// governor sizes a vCPU's polling: after each idle spell (from the last answer
// to the next request),
// - the request came while looking: the window was right, it stays;
// - it came after the thread had gone to sleep but within `max`: looking a
//   little longer would have caught it, the window doubles (from kStart);
// - it came later than `max`: no window would have caught it, the window
//   halves, and below kStart is 0.
// In a burst of requests closer than `max` the thread stays awake; a few
// longer gaps and it sleeps at once again. `max` 0: never look.
//
// Not thread-safe: one per reading thread.
#pragma once

#include <algorithm>
#include <chrono>

namespace clairfs::fs {

class SpinWindow {
 public:
  using us = std::chrono::microseconds;
  static constexpr us kStart{16};

  explicit SpinWindow(us max) : max_(std::max(max, us{0})) {}

  // How long to look before sleeping, now.
  us current() const { return window_; }
  us max() const { return max_; }

  // One idle spell ended: `idle` from the last answer to the next request,
  // `found_looking` if the request came before the window ran out.
  void Observe(us idle, bool found_looking) {
    if (found_looking || max_.count() == 0) return;
    if (idle <= max_) {
      window_ = std::min(max_, window_.count() == 0 ? std::min(kStart, max_) : window_ * 2);
    } else {
      window_ /= 2;
      if (window_ < kStart) window_ = us{0};
    }
  }

 private:
  const us max_;
  us window_{0};
};

}  // namespace clairfs::fs
