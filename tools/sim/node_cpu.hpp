// NodeCpu: a node's cores as a shared device. Each piece of work needs some
// seconds of one core; the works in progress share the cores equally
// (processor sharing), each running at min(1, cores / works): with as many
// cores as works none slows another, with more works than cores they all
// slow alike. The job's per-file decoding and (where it runs on the CPU) its
// per-step compute, and clairfs's daemon work per byte and per open, are
// such works on their node's cores (docs/simulation.md, "The model").
//
// NodeCpus holds every node's; with cores 0 there are none and Run waits
// the work's seconds without sharing anything (the model without a CPU).
// Single-thread (the EventLoop's).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "tools/sim/event_loop.hpp"

namespace clairfs::sim {

class NodeCpu {
 public:
  NodeCpu(EventLoop* loop, double cores) : loop_(loop), cores_(cores) {}
  NodeCpu(const NodeCpu&) = delete;
  NodeCpu& operator=(const NodeCpu&) = delete;

  // Runs `seconds` of one core's work; `done` runs when it has had them.
  // Work of 0 seconds is done at once (after the loop's current event).
  void Run(double seconds, EventLoop::Fn done);
  size_t in_progress() const { return works_.size(); }
  // Core seconds given so far to works that completed.
  double work_seconds() const { return work_seconds_; }

 private:
  // Each work in progress runs at this rate (core seconds per second).
  double Rate() const;
  // Brings attained_ up to the loop's time.
  void Advance();
  void Reschedule();
  void Complete(uint64_t generation);

  struct Work {
    double seconds;
    EventLoop::Fn done;
  };
  EventLoop* loop_;
  double cores_;
  double attained_ = 0;  // the service every work in progress has had since it joined at 0
  double updated_ = 0;   // when attained_ was last brought up to date
  // Works by the attained_ they finish at, then by id (the order they came).
  std::multimap<double, Work> works_;
  uint64_t generation_ = 0;  // of the completion scheduled last
  double work_seconds_ = 0;
};

class NodeCpus {
 public:
  // `cores` per node; 0: not modelled.
  NodeCpus(EventLoop* loop, uint32_t nodes, double cores);
  bool modelled() const { return !cpus_.empty(); }
  // `seconds` of one core's work on `node`; without a model, a wait of
  // `seconds` that shares nothing.
  void Run(uint32_t node, double seconds, EventLoop::Fn done);
  // Core seconds `node` has given to completed works (0 without a model).
  double work_seconds(uint32_t node) const;

 private:
  EventLoop* loop_;
  std::vector<std::unique_ptr<NodeCpu>> cpus_;
};

}  // namespace clairfs::sim
