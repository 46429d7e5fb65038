// SharedDevice: a resource that every request in progress on it shares at
// once: a shared file system's servers, a node's SSD, a node's link.
//
// A request of `bytes` needs max(bytes / bandwidth, 1 / iops) seconds of the
// whole device (whichever limit binds it, as a throttled block device and
// most storage do), and the requests in progress share the device equally
// (processor sharing): alone a request runs at full speed, one of n runs at
// 1/n of it. Before it joins, a request waits latency + latency_per_request
// x (requests in progress when it arrived) without using the device: an open
// on a metadata server whose latency grows with its load.
// Single-thread (the EventLoop's).
#pragma once

#include <cstdint>
#include <map>

#include "tools/sim/event_loop.hpp"

namespace clairfs::sim {

struct DeviceSpec {
  double bandwidth = 0;            // bytes per second; 0: unlimited
  double iops = 0;                 // requests per second; 0: unlimited
  double latency = 0;              // seconds before each request
  double latency_per_request = 0;  // seconds more per request in progress
};

struct DeviceCounters {
  uint64_t requests = 0;          // completed
  uint64_t bytes = 0;             // of the completed requests
  double busy_seconds = 0;        // time with at least one request in progress
  uint32_t peak_in_progress = 0;  // most requests sharing the device at once
};

class SharedDevice {
 public:
  SharedDevice(EventLoop* loop, DeviceSpec spec) : loop_(loop), spec_(spec) {}
  SharedDevice(const SharedDevice&) = delete;
  SharedDevice& operator=(const SharedDevice&) = delete;

  // Moves `bytes` through the device; `done` runs when they are through.
  void Transfer(uint64_t bytes, EventLoop::Fn done);
  // The device time a request of `bytes` needs alone (its latency aside).
  double Demand(uint64_t bytes) const;
  size_t in_progress() const { return finishing_.size(); }
  const DeviceCounters& counters() const { return counters_; }

 private:
  struct Request {
    uint64_t bytes;
    EventLoop::Fn done;
  };
  void Join(uint64_t bytes, EventLoop::Fn done);
  // Brings attained_ up to the loop's time.
  void Advance();
  // Schedules the next completion (and makes the earlier schedule stale).
  void Reschedule();
  void Complete(uint64_t generation);

  EventLoop* loop_;
  DeviceSpec spec_;
  // The service each request in progress has received since the device
  // started (all receive the same share), and when that was last brought up
  // to date. A request joining at attained_ = a with demand d finishes when
  // attained_ reaches a + d.
  double attained_ = 0;
  double updated_ = 0;
  std::multimap<double, Request> finishing_;  // by the attained_ they finish at
  uint64_t generation_ = 0;                   // of the completion scheduled last
  DeviceCounters counters_;
};

}  // namespace clairfs::sim
