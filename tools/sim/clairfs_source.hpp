// ClairfsSource: clairfs as it is, as a policy. Each node runs the real
// prefetch planner (prefetch/planner: Belady over the node's ranks' merged
// order) over a RAM budget, with `fetch_slots` fetches in flight; an open of
// a file the planner holds is served from RAM (the page cache) at no cost, a
// fetch under way is waited for, anything else is read on demand.
//
// Placement as the daemon's: clairfs-partition's placement policy puts the
// files in `partitions` partitions (pack::MakePlacement; balanced by
// default), each partition homed on the node that reads most of its bytes
// first in the first epoch (fs::PlaceByReader, as the daemon does when it
// knows the order at its start), or on node p mod N without `homes_by_reader`. Staging as the
// daemon does it (issue #28): from the launch each node copies its partitions to its SSD in chunks
// of consecutive files (all nodes at once, from the shared file system), with `stage_threads`
// copying threads each on a partition of its own, a partition a read needed first going next; a
// file not on its home's SSD yet is read from the shared file system by its home (over the home's
// link to another reader) and lands on the SSD as it passes, so staging skips it; a file in a chunk
// under way waits for the chunk. A node's staging pauses while reads of its partitions are at the
// shared file system, and `stage_yield` seconds after the last (not at all with 0). So every byte
// is read from the shared file system once; with `stage_whole_chunks` staging reads its chunks
// whole instead, over what reads brought already (as the daemon did before issue #28). With
// `stage_first_use` (the daemon's when it knows the first epoch's order at start, since commit
// 47423e7) each node first copies the ranges of its partitions the first epoch reads, in the order
// any rank first reads them, over all its partitions (the daemon's fs::FirstUseUnits,
// first_use.hpp): its copying threads take them one at a time; a partition whose last range is in,
// or that a read needed before its turn (and has no ranges left), is finished next (the rest of its
// files, in chunks), ahead of further ranges; the partitions the first epoch does not read come
// last. A large file copied in pieces is there when all its pieces are; a read of it before then
// (the job's or a fetch) does what the daemon's does (Stager::TeeFile, fs::PartialCopy::Fill): it
// reads the pieces no one has begun from the shared file system itself, in one read by the home
// as for a file not staged (staging pauses for it, and skips those pieces, which land as they
// pass), waits for the pieces under way, and takes those and the ones in from the home's SSD.
// Without it, partitions in turn as above. The planner's fetches are counted in prefetched().
//
// Replicas as the daemon's (fs::Ownership, the manifest's `replicas`): partition p is held by
// its home and the next `replicas` - 1 nodes (mod N; clamped to the nodes), and each holder stages
// its own copy from the shared file system with its own copying threads onto its own SSD, the
// partitions it holds in one queue (ascending, as Ownership::PartitionsOf gives them to the
// daemon's Stager) and, with `stage_first_use`, their first-use ranges among its own in the one
// first-use order. Reads go to the home alone (every node is alive): a read passing through the
// home lands on the home's copy only, so the shared file system gives each copy's bytes once.
// Not modelled: the daemon's holder of a replica reads that partition from its own copy
// (DistributedPackStore), where here it reads the home's.
//
// Memory: each node's planner is given only the files the node's ranks read over the job, in
// compact ids (NodeReads): the same planner over a smaller dataset, with the same decisions (the
// ids keep the files' order), its state O(those files) instead of O(dataset). Homes by reader
// take the first epoch's first readers (O(dataset), once) and the nonzero (partition, node)
// byte counts, not a partitions x nodes table. Each replica beyond the home's copy adds a byte
// of staging state per file. Single-thread (the EventLoop's).
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/clock.hpp"
#include "fs/dist/ownership.hpp"
#include "prefetch/planner/planner.hpp"
#include "tools/sim/fanstore_source.hpp"
#include "tools/sim/first_use.hpp"
#include "tools/sim/job.hpp"
#include "tools/sim/node_cpu.hpp"
#include "tools/sim/node_reads.hpp"
#include "tools/sim/shared_device.hpp"

namespace clairfs::sim {

struct ClairfsSpec {
  uint32_t partitions = 1;
  std::string placement = "balanced";  // which partition a file is in (clairfs-partition's)
  bool homes_by_reader = true;  // partitions homed where the first epoch reads them (the daemon's)
  uint32_t replicas = 1;        // copies of each partition, on its home and the nodes after it
  uint64_t ram_bytes = 16ull << 30;   // each node's planner budget
  uint32_t fetch_slots = 2;           // a node's fetches in flight at once
  uint32_t stage_threads = 2;         // a node's copying threads, each on its own partition
  uint64_t stage_chunk = 4ull << 20;  // bytes of consecutive files a staging read takes at most
  double stage_yield = 0.005;         // staging's pause after a node's last read of its partitions
  bool stage_whole_chunks = false;  // staging reads a chunk whole, over what reads brought already
  bool stage_first_use = true;      // the first epoch's ranges first, in its order (the daemon's)
  NodeSpec node;
  // The daemon's CPU, as work on its node's cores (null or not modelled:
  // none). Seconds of one core per byte or open; the defaults are this
  // machine's (docs/simulation.md, "The daemons' CPU costs").
  NodeCpus* cpus = nullptr;
  double cpu_per_staged_byte = 3.3e-9;  // a staging thread's copy and checksum
  double cpu_per_served_byte = 3.0e-9;  // a fetch or demand read for the job, into the mount
  double cpu_per_peer_byte = 3.6e-9;    // each end of a transfer between nodes
  double cpu_per_open = 73e-6;          // the FUSE round trip and the planner
};

class ClairfsSource final : public DataSource {
 public:
  // `sampler` (the job's order), `shared_fs` and `file_bytes` outlive this.
  static Result<std::unique_ptr<ClairfsSource>> Create(EventLoop* loop, SharedDevice* shared_fs,
                                                       const std::vector<uint64_t>* file_bytes,
                                                       const prefetch::Sampler& sampler,
                                                       const JobSpec& job, const ClairfsSpec& spec);
  void Launch() override;  // staging and the planners' fetches begin
  void StartEpoch(uint32_t epoch) override;
  void Read(uint32_t node, uint64_t file, EventLoop::Fn done) override;
  // Seconds from the launch until every copy of every partition was on its
  // holder's SSD.
  double staging_seconds() const { return staged_at_; }
  // With stage_first_use: node's ranges to copy first, in order (for tests).
  const std::vector<FirstUseUnit>& first_use_units(uint32_t node) const {
    return node_[node].units;
  }
  // The first files to land on their home's SSD (by staging or a read
  // passing through), in order, up to 64 (for tests).
  const std::vector<uint64_t>& landed_order() const { return landed_order_; }
  // Reads (the job's and fetches) of a file being copied in pieces that
  // read its missing pieces themselves (for tests).
  uint64_t piece_reads() const { return piece_reads_; }
  // Bytes written to `node`'s SSD as the copies it holds (staging, and reads
  // passing through it as their home).
  uint64_t ssd_written(uint32_t node) const { return node_[node].written; }
  const fs::Ownership& ownership() const { return own_; }

 private:
  // The simulated time, for the planner's stall accounting.
  class LoopClock final : public Clock {
   public:
    explicit LoopClock(const EventLoop* loop) : loop_(loop) {}
    TimePoint Now() const override;

   private:
    const EventLoop* loop_;
  };
  // A copying thread: its partition (-1: none yet), the next file to look
  // at in it, and whether a chunk of it is under way.
  struct Stream {
    int64_t partition = -1;
    size_t cursor = 0;  // in the partition's files
    bool busy = false;
  };
  struct Node {
    std::unique_ptr<prefetch::Planner> planner;  // in the node's compact ids (reads_)
    std::unique_ptr<SharedDevice> ssd, link;
    uint32_t in_flight = 0;
    // Per dataset file being fetched: the opens waiting for it.
    std::unordered_map<uint64_t, std::vector<EventLoop::Fn>> waiting;
    // Staging: this node's partitions no copying thread has begun, the
    // next first, and the threads.
    std::deque<uint32_t> to_stage;
    std::vector<Stream> streams;
    // stage_first_use: the ranges to copy first, the next one, and the
    // partitions to finish ahead of them (their ranges are in, or a read
    // needed them before their turn).
    std::vector<FirstUseUnit> units;
    size_t next_unit = 0;
    std::deque<uint32_t> finish;
    bool stage_paused = false;         // waiting for the reads below to end
    uint32_t source_reads = 0;         // reads of this node's partitions at the shared file system
    double last_source_read = -1e300;  // none yet
    uint64_t written = 0;              // bytes written to the SSD as this node's copies
  };
  enum FileState : char { kNotStaged = 0, kStaging = 1, kOnSsd = 2 };
  ClairfsSource(EventLoop* loop, SharedDevice* shared_fs, const std::vector<uint64_t>* file_bytes,
                const ClairfsSpec& spec, NodeReads reads, std::vector<uint32_t> partition_of,
                std::vector<int> homes);
  uint32_t PartitionOf(uint64_t file) const { return partition_of_[file]; }
  uint32_t Home(uint32_t partition) const {
    return homes_.empty() ? partition % nodes_ : static_cast<uint32_t>(homes_[partition]);
  }
  uint32_t HomeOf(uint64_t file) const { return Home(PartitionOf(file)); }
  // Which of partition's copies `node` holds: 0 its home's, j its j-th replica.
  uint32_t CopyOf(uint32_t node, uint32_t partition) const {
    return static_cast<uint32_t>((uint64_t{node} + nodes_ - Home(partition)) % nodes_);
  }
  // `file`'s FileState in copy `copy` of its partition.
  char& StateOf(uint32_t copy, uint64_t file) {
    return copy == 0 ? state_[file] : replica_state_[copy - 1][file];
  }
  // Copy `copy`'s first-use ranges of `partition` not done.
  uint32_t& UnitsLeft(uint32_t copy, uint32_t partition) {
    return units_left_[uint64_t{copy} * spec_.partitions + partition];
  }
  // A large file's pieces' size (the last may be smaller).
  uint64_t PieceSize() const { return PieceSize(spec_); }
  // At least a page: `stage_chunk: 0` (each file a read of its own) would
  // otherwise cut a large file into pieces of one byte.
  static uint64_t PieceSize(const ClairfsSpec& spec) {
    return std::max<uint64_t>(spec.stage_chunk, kMinPiece);
  }
  static constexpr uint64_t kMinPiece = 4096;
  // Starts a chunk on each of `node`'s idle copying threads, unless reads of
  // its partitions are under way (it pauses) or all is staged.
  void StageNext(uint32_t node);
  // Starts the next chunk of `node`'s copying thread `stream` if it is idle.
  void StageChunk(uint32_t node, uint32_t stream);
  // Starts `node`'s next first-use range on `stream`; false if it had nothing
  // left to read (counted as done).
  bool StageUnit(uint32_t node, uint32_t stream);
  // One of partition p's first-use ranges is done: with the last, p is
  // finished next.
  void UnitDone(uint32_t node, uint32_t partition);
  // `file` is on its home's SSD (staged, or passed through by a read).
  void Landed(uint64_t file);
  // `file` (or, in pieces, one piece of it) is in replica copy `copy` (>= 1).
  void ReplicaLanded(uint32_t copy, uint64_t file);
  void ReplicaPieceLanded(uint32_t copy, uint64_t file);
  // Records the staging time once every copy of every file is in.
  void CheckStaged();
  // Piece `piece` of `file` (copied in pieces) is on its home's SSD; with
  // the last, the file is.
  void PieceLanded(uint64_t file, size_t piece);
  // Reads `bytes` of `partition`'s pack from the shared file system by its
  // home for a read: the home's staging pauses meanwhile (and stage_yield
  // after), the partition is staged next. `done` when they are in.
  void ReadSource(uint32_t home, uint32_t partition, uint64_t bytes, EventLoop::Fn done);
  // Reads `file` from the shared file system by its home, for `node`.
  void ReadThroughHome(uint32_t node, uint64_t file, SourceCounters* count, EventLoop::Fn done);
  // Reads `file`, some of whose pieces are staged or on their way, for
  // `node`: the missing ones from the shared file system, the rest from
  // the home's SSD once in.
  void ReadPieces(uint32_t node, uint64_t file, SourceCounters* count, EventLoop::Fn done);
  // `bytes` from `home` to `node` over the home's link (nothing when they
  // are one node), with the daemons' CPU at both ends.
  void OverLink(uint32_t node, uint32_t home, uint64_t bytes, EventLoop::Fn done);
  // Moves `file`'s bytes to `node` from wherever they are, counting them
  // in *count by where they came from.
  void Fetch(uint32_t node, uint64_t file, SourceCounters* count, EventLoop::Fn done);
  // Starts the fetches the planner wants, as slots allow.
  void Pump(uint32_t node);
  // `seconds` of the daemon's work on `node`'s cores, then `done`; at once
  // (no event) when the cores are not modelled, so nothing else changes.
  void Cpu(uint32_t node, double seconds, EventLoop::Fn done);
  // Read's work once the open has reached the daemon.
  void Open(uint32_t node, uint64_t file, EventLoop::Fn done);
  bool cpu_modelled() const { return spec_.cpus != nullptr && spec_.cpus->modelled(); }

  EventLoop* loop_;
  SharedDevice* fs_;
  const std::vector<uint64_t>* bytes_;
  ClairfsSpec spec_;
  uint32_t nodes_;
  LoopClock clock_;
  std::vector<Node> node_;
  NodeReads reads_;                     // each node's files: its planner's compact ids
  std::vector<uint32_t> partition_of_;  // per file
  std::vector<int> homes_;              // per partition; empty: p mod N
  std::vector<std::vector<uint64_t>> partition_files_;  // per partition, in its pack's order
  std::vector<char> state_;                             // per file: a FileState
  // Per file in kStaging: the reads waiting for it to land.
  std::unordered_map<uint64_t, std::vector<EventLoop::Fn>> landing_;
  uint64_t files_left_ = 0;           // not on their home's SSD yet
  std::vector<uint32_t> units_left_;  // per copy and partition: first-use ranges not done
  fs::Ownership own_;                 // which nodes hold which partitions
  // Per replica j >= 1 (at j - 1), per file: the FileState of its copy on
  // the j-th node after its home. Only staging writes them.
  std::vector<std::vector<char>> replica_state_;
  uint64_t replica_files_left_ = 0;  // files times replicas not in yet
  // A replica's file copied in pieces: its pieces not in yet, by
  // (j - 1) * files + file.
  std::unordered_map<uint64_t, uint64_t> replica_pieces_;
  // A large file being copied in pieces: each piece's FileState (not
  // begun, on its way from staging or a read, on the home's SSD), and how
  // many are not on the SSD yet.
  struct Pieces {
    std::vector<char> state;
    uint64_t left = 0;
  };
  std::unordered_map<uint64_t, Pieces> pieces_;
  uint64_t piece_reads_ = 0;
  std::vector<uint64_t> landed_order_;
  double stage_start_ = 0, staged_at_ = 0;
};

}  // namespace clairfs::sim
