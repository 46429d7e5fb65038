// Clock: where the planner and the prefetch engine read the time, so tests
// run on a fake clock.
//
// Time serves statistics (how long an open waited for its file) and delays
// (when to retry a push). SteadyClock reads std::chrono::steady_clock; FakeClock returns a
// value the test sets and advances by hand. Both are thread-safe: Now() may be
// called from any thread, and FakeClock's setters may race with readers.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace clairfs {

class Clock {
 public:
  using Duration = std::chrono::nanoseconds;
  // A point on the clock's own axis; only differences are meaningful.
  using TimePoint = std::chrono::time_point<std::chrono::steady_clock, Duration>;

  virtual ~Clock() = default;
  virtual TimePoint Now() const = 0;
};

// The real monotonic clock. Stateless; thread-safe.
class SteadyClock final : public Clock {
 public:
  TimePoint Now() const override {
    return std::chrono::time_point_cast<Duration>(std::chrono::steady_clock::now());
  }
  // One shared instance (the clock has no state).
  static SteadyClock& Instance();
};

// A clock that moves only when told. Starts at 0. Thread-safe.
class FakeClock final : public Clock {
 public:
  TimePoint Now() const override { return TimePoint(Duration(ns_.load())); }
  void Advance(Duration d) { ns_.fetch_add(d.count()); }
  void Set(TimePoint t) { ns_.store(t.time_since_epoch().count()); }

 private:
  std::atomic<int64_t> ns_{0};
};

}  // namespace clairfs
