// ClairfsSource: clairfs as it is, as a policy. Each node runs the real
// prefetch planner (prefetch/planner: Belady over the node's ranks' merged
// order) over a RAM budget, with `fetch_slots` fetches in flight; an open of
// a file the planner holds is served from RAM (the page cache) at no cost, a
// fetch under way is waited for, anything else is read on demand.
//
// Placement and staging, simplified for now: FanStore's contiguous
// partitions, partition p homed on node p mod N; from the job's start each
// node copies its partitions to its SSD one after another in partition order
// (all nodes at once, from the shared file system) while the job runs. A
// fetch or demand read takes the file from the reader's SSD when its
// partition is homed and staged there, from its home over the link when
// staged there, else from the shared file system (the real daemon's fallback).
// The planner's fetches are counted in prefetched().
// Single-thread (the EventLoop's).
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "base/clock.hpp"
#include "prefetch/planner/planner.hpp"
#include "tools/sim/fanstore_source.hpp"
#include "tools/sim/job.hpp"
#include "tools/sim/shared_device.hpp"

namespace clairfs::sim {

struct ClairfsSpec {
  uint32_t partitions = 1;
  uint64_t ram_bytes = 16ull << 30;  // each node's planner budget
  uint32_t fetch_slots = 8;          // a node's fetches in flight at once
  NodeSpec node;
};

class ClairfsSource final : public DataSource {
 public:
  // `sampler` (the job's order), `shared_fs` and `file_bytes` outlive this.
  static Result<std::unique_ptr<ClairfsSource>> Create(EventLoop* loop, SharedDevice* shared_fs,
                                                       const std::vector<uint64_t>* file_bytes,
                                                       const prefetch::Sampler& sampler,
                                                       const JobSpec& job, const ClairfsSpec& spec);
  void StartEpoch(uint32_t epoch) override;
  void Read(uint32_t node, uint64_t file, EventLoop::Fn done) override;
  // Seconds from the job's start until every partition was on its SSD.
  double staging_seconds() const { return staged_at_; }

 private:
  // The simulated time, for the planner's stall accounting.
  class LoopClock final : public Clock {
   public:
    explicit LoopClock(const EventLoop* loop) : loop_(loop) {}
    TimePoint Now() const override;

   private:
    const EventLoop* loop_;
  };
  struct Node {
    std::unique_ptr<prefetch::Planner> planner;
    std::unique_ptr<SharedDevice> ssd, link;
    uint32_t in_flight = 0;
    // Per file being fetched: the opens waiting for it.
    std::unordered_map<uint64_t, std::vector<EventLoop::Fn>> waiting;
  };
  ClairfsSource(EventLoop* loop, SharedDevice* shared_fs, const std::vector<uint64_t>* file_bytes,
                const ClairfsSpec& spec, uint32_t nodes);
  uint32_t PartitionOf(uint64_t file) const;
  void StageNext(uint32_t node, uint32_t partition);
  // Moves `file`'s bytes to `node` from wherever they are, counting them
  // in *count by where they came from.
  void Fetch(uint32_t node, uint64_t file, SourceCounters* count, EventLoop::Fn done);
  // Starts the fetches the planner wants, as slots allow.
  void Pump(uint32_t node);

  EventLoop* loop_;
  SharedDevice* fs_;
  const std::vector<uint64_t>* bytes_;
  ClairfsSpec spec_;
  uint32_t nodes_;
  LoopClock clock_;
  std::vector<Node> node_;
  std::vector<uint64_t> partition_bytes_;
  std::vector<char> staged_;  // per partition
  uint32_t partitions_left_ = 0;
  double stage_start_ = 0, staged_at_ = 0;
};

}  // namespace clairfs::sim
