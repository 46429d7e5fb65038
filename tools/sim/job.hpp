// The training job the simulator runs: N nodes x G ranks, synchronous data
// parallel (a step ends everywhere when the slowest rank's step ends: the
// gradients' allreduce), each rank fed by a PyTorch-style DataLoader.
//
// The loader of a rank has W worker processes; batch i is loaded by worker
// i mod W, which reads its files one after another; W x prefetch_factor
// batches are asked for ahead: at the epoch's start the first W x pf, then one
// more each time the rank takes a batch (before its step's compute), as
// torch.utils.data's multi-process iterator does. Workers are not persistent:
// an epoch's loading starts when the epoch does. Single-thread (the loop's).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "base/status.hpp"
#include "prefetch/order/sampler.hpp"
#include "tools/sim/event_loop.hpp"
#include "tools/sim/node_cpu.hpp"

namespace clairfs::sim {

struct JobSpec {
  uint32_t nodes = 1;
  uint32_t ranks_per_node = 1;
  uint32_t batch_size = 32;
  double compute_seconds = 0.1;  // one step's compute, every rank
  uint32_t epochs = 1;
  uint32_t workers = 2;          // per rank; at least 1
  uint32_t prefetch_factor = 2;  // batches per worker asked for ahead; at least 1
  bool drop_last = false;        // the loader's: drop a last, partial batch
  double file_seconds = 0;       // a worker's own time per file once its bytes are in (decoding)
  double start_seconds = 0;      // from the launch (the policy's Launch) to the first epoch
  uint32_t reads_per_file = 1;   // the loader's read calls per file (on the shared file system)
  // The job's first step's own extra time, every rank: a framework's warm-up
  // inside the first epoch (tf.function tracing), while the loaders read on.
  double first_step_seconds = 0;
  // The steps' compute (and first_step_seconds) runs on the node's cores, as
  // a CPU-only training process's does; false: on an accelerator, sharing
  // nothing with the loaders and daemons. Only with a CPU model (NodeCpus).
  bool compute_on_cpu = false;
};

// Where the loader workers' reads go: one policy (the shared file system
// directly, FanStore, NoPFS, clairfs), which counts what it served from where.
struct SourceCounters {
  uint64_t ram_bytes = 0, local_bytes = 0, peer_bytes = 0, shared_fs_bytes = 0;
  uint64_t reads = 0;
};

class DataSource {
 public:
  virtual ~DataSource() = default;
  // At the job's launch, start_seconds before its first epoch: the daemons
  // start with the job and may stage while its processes start up.
  virtual void Launch() {}
  // Before any read of `epoch` (a policy may stage, plan or evict then).
  virtual void StartEpoch(uint32_t epoch) {}
  // A worker of a rank on `node` reads dataset file `file` whole; `done`
  // runs once it has the bytes.
  virtual void Read(uint32_t node, uint64_t file, EventLoop::Fn done) = 0;
  // The policy decodes each file itself before the loader takes it (NoPFS's
  // prefetcher threads run the transforms): the loader's workers then spend
  // no file_seconds of their own.
  virtual bool decodes() const { return false; }
  // The job's reads, by where each was served from.
  const SourceCounters& counters() const { return counters_; }
  // What the policy read on its own ahead of the job's reads (clairfs's
  // prefetchers; staging not included), by where it came from, counted as
  // each read starts. Zero for a policy that does not prefetch.
  const SourceCounters& prefetched() const { return prefetched_; }

 protected:
  SourceCounters counters_;
  SourceCounters prefetched_;
};

struct EpochResult {
  double seconds = 0;         // from the epoch's start to its last step's end
  double stall_fraction = 0;  // of the ranks' time, waiting for a batch
  uint64_t steps = 0;
  SourceCounters sources;  // what this epoch read, by source
  // What the policy prefetched from the epoch's StartEpoch to its end, by
  // source: over the epochs, every prefetch once.
  SourceCounters prefetched;
};

// Called as each epoch ends (its number from 0), for progress lines.
using EpochFn = std::function<void(uint32_t epoch, const EpochResult& result)>;

// Runs the job on `loop` (from its current time) with every rank's order
// from `sampler`, whose world size must be nodes x ranks_per_node; rank r
// runs on node r / ranks_per_node. Every rank takes as many steps as the rank
// with the fewest batches has (a rank cannot step alone). With `cpus`
// modelling the nodes' cores, each file's file_seconds (decoding) is work on
// the rank's node's cores, and so is each step's compute with compute_on_cpu.
Result<std::vector<EpochResult>> RunJob(EventLoop* loop, const JobSpec& job,
                                        const prefetch::Sampler& sampler, DataSource* source,
                                        const EpochFn& on_epoch = {}, NodeCpus* cpus = nullptr);

}  // namespace clairfs::sim
