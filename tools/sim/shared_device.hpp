// SharedDevice: a resource that every request in progress on it shares at
// once: a shared file system's servers, a node's SSD, a node's link.
//
// Two budgets, as a throttled block device and most storage have them:
// bytes (bandwidth) and requests (IOPS). A request of `bytes` needs
// bytes / bandwidth seconds of the first and 1 / iops of the second; the
// requests in progress share each equally (processor sharing), and a request
// is done when it has had both. Alone a request takes max(bytes / bandwidth,
// 1 / iops); small requests (bound by IOPS) and large ones (bound by bytes)
// in progress together mostly take different budgets and slow each other
// little, where n requests of one kind run at 1/n. Before it joins, a
// request waits latency + latency_per_request x (requests in progress when
// it arrived) without using the device: an open on a metadata server whose
// latency grows with its load. With client_bandwidth, a third budget per
// client (a node's own link to the servers): its requests in progress share
// it, and a request is done when it has had all three. Each budget is shared
// on its own, so a share one budget leaves unused is not given to the
// requests another holds back (an approximation of max-min fairness).
// Single-thread (the EventLoop's).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "tools/sim/event_loop.hpp"

namespace clairfs::sim {

struct DeviceSpec {
  double bandwidth = 0;            // bytes per second; 0: unlimited
  double iops = 0;                 // requests per second; 0: unlimited
  double latency = 0;              // seconds before each request
  double latency_per_request = 0;  // seconds more per request in progress
  double client_bandwidth = 0;  // bytes per second of one client's requests together; 0: no limit
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
  // `client` (a node; -1: none) shares client_bandwidth with that client's
  // other requests in progress.
  void Transfer(uint64_t bytes, EventLoop::Fn done, int client = -1);
  // The device time a request of `bytes` needs alone (its latency aside).
  double Demand(uint64_t bytes) const;
  size_t in_progress() const { return live_; }
  const DeviceCounters& counters() const { return counters_; }

 private:
  struct Request {
    uint64_t bytes;
    EventLoop::Fn done;
    int lanes_left;  // budgets it still needs service from
  };
  // A request that needs service up to `at` (in its lane's attained);
  // requests due together finish in the order they joined (id).
  struct Finishing {
    double at;
    uint64_t id;    // in joining order
    uint32_t slot;  // in requests_
  };
  // One budget shared by the requests that still need some of it. A
  // request joining at attained = a with demand d is done with it when
  // attained reaches a + d.
  struct Lane {
    explicit Lane(SharedDevice* owner) : device(owner) {}
    SharedDevice* device;
    double attained = 0;  // the service each request in it has had
    double updated = 0;   // when attained was last brought up to date
    // A heap: the request finishing first (then the first to join) on top.
    std::vector<Finishing> finishing;
    uint64_t generation = 0;       // of the completion scheduled last
    EventLoop::EventId scheduled;  // that completion, cancelled when it is rescheduled
  };
  static bool LaterFinish(const Finishing& a, const Finishing& b);
  // Runs the Join of the request waiting in `slot` of arriving_.
  void Arrive(uint32_t slot);
  void Join(uint64_t bytes, EventLoop::Fn done, int client);
  // Brings lane's attained up to the loop's time.
  void Advance(Lane* lane);
  // Schedules lane's next completion (and makes its earlier schedule stale).
  void Reschedule(Lane* lane);
  void Complete(Lane* lane, uint64_t generation);
  // The request in `slot` has had its service from one more lane.
  void Served(uint32_t slot, std::vector<EventLoop::Fn>* done);
  // Brings busy_seconds up to the loop's time.
  void CountBusy();
  Lane* ClientLane(int client);

  // A request waiting out its latency before it joins.
  struct Arriving {
    uint64_t bytes;
    EventLoop::Fn done;
    int client;
  };

  EventLoop* loop_;
  DeviceSpec spec_;
  Lane bytes_{this}, ops_{this};
  std::vector<std::unique_ptr<Lane>> clients_;  // by client: its share of client_bandwidth
  // In progress, by slot (a slot is reused once its request is done).
  std::vector<Request> requests_;
  std::vector<uint32_t> free_requests_;
  size_t live_ = 0;                 // requests in progress
  std::vector<Arriving> arriving_;  // by slot, reused likewise
  std::vector<uint32_t> free_arriving_;
  std::vector<EventLoop::Fn> finished_;  // scratch for Complete
  uint64_t next_id_ = 0;
  double busy_since_ = 0;  // busy_seconds counted up to then
  DeviceCounters counters_;
};

}  // namespace clairfs::sim
