// NoPFSSource: NoPFS / HDMLP's design (REFERENCE.md section 2) as a policy.
// Knowing every epoch's order, each node counts how often its ranks will read
// each file over the whole job and assigns the most-read files to its RAM,
// the next to its SSD (up to their capacities; ties: the file read first
// first). Placement is static, nothing is evicted. A tier is filled as its
// files are first read (from the shared file system or from a node that
// already holds them: the cheapest source); later reads take the file from
// the node's own tier, else from a node that holds it, else from the shared
// file system. A node's tiers are kept for the files it reads (NodeReads),
// not for the whole dataset.
//
// With `prefetcher` (the system as published), each rank also has NoPFS's
// staging buffer: `prefetch_threads` fetches in flight that read the rank's
// accesses in order, epoch after epoch from the job's launch (they move to
// the next epoch once every fetch of the current one is done, not when the
// job's loader restarts), each from the cheapest source as above, into a
// buffer of `staging_bytes` (an access is started once its sample, of
// `sample_bytes` or the file's size, fits beside the staged accesses not yet
// taken; one larger than the buffer waits until the buffer is empty). The
// job's loader then takes each file from the buffer (counted as RAM reads;
// where the prefetcher got the bytes is in prefetched()), waiting for it
// when it is not staged yet; a taken access frees its bytes. A read names a
// node, not a rank: it takes an access of that file in the job's current
// epoch staged by any of the node's ranks (the same rank's, but for a file
// two of them read in one epoch). NoPFS's threads also run the job's transforms: a thread
// spends the job's file_seconds on each file after its bytes are in, and the
// loader's workers spend none (decodes()). Without the prefetcher, the
// loader's reads go to the tiers directly and its workers decode.
// Single-thread.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "base/status.hpp"
#include "prefetch/order/sampler.hpp"
#include "tools/sim/fanstore_source.hpp"
#include "tools/sim/job.hpp"
#include "tools/sim/node_reads.hpp"
#include "tools/sim/shared_device.hpp"

namespace clairfs::sim {

struct NopfsSpec {
  uint64_t ram_bytes = 16ull << 30;   // each node's RAM tier
  uint64_t ssd_bytes = 256ull << 30;  // each node's SSD tier
  NodeSpec node;
  bool prefetcher = true;                  // NoPFS's staging-buffer prefetcher
  uint64_t staging_bytes = 1024ull << 20;  // each rank's staging buffer
  uint32_t prefetch_threads = 8;           // each rank's fetches into it at once; at least 1
  // A staged sample's bytes in the buffer (NoPFS stages samples as its
  // transforms leave them); 0: the file's own size.
  uint64_t sample_bytes = 0;
};

class NopfsSource final : public DataSource {
 public:
  // Reads every epoch's order from `sampler` now (to count accesses and to
  // know each rank's). InvalidArgument for a prefetcher of no threads.
  static Result<std::unique_ptr<NopfsSource>> Create(EventLoop* loop, SharedDevice* shared_fs,
                                                     const std::vector<uint64_t>* file_bytes,
                                                     const prefetch::Sampler& sampler,
                                                     const JobSpec& job, const NopfsSpec& spec);
  bool decodes() const override { return spec_.prefetcher; }
  void Launch() override;
  void StartEpoch(uint32_t epoch) override;
  void Read(uint32_t node, uint64_t file, EventLoop::Fn done) override;
  // The accesses staged or being staged and not yet taken, over all ranks.
  size_t staged() const { return staged_.size(); }

  enum class Tier : uint8_t { kNone, kRam, kSsd };
  // Where `node` keeps `file` (whether it holds it yet or not).
  Tier TierOf(uint32_t node, uint64_t file) const;
  // A node that holds `file` now, other than `node` (the lowest numbered):
  // where a first read of it on `node` comes from; -1 if none. O(1).
  int Holder(uint32_t node, uint64_t file) const;

 private:
  NopfsSource(EventLoop* loop, SharedDevice* shared_fs, const std::vector<uint64_t>* file_bytes,
              const NopfsSpec& spec, NodeReads reads);
  // `node` now holds `file` (its compact id `c` there).
  void Hold(uint32_t node, uint64_t file, prefetch::FileId c);
  // Reads `file` (compact id `c` on `node`, or kNoFile) from the cheapest
  // source, counting it in `count`; keeps it in the node's tier.
  void Fetch(uint32_t node, uint64_t file, prefetch::FileId c, SourceCounters* count,
             EventLoop::Fn done);

  // The staging prefetcher. An access staged or wanted: claimed by a rank's
  // prefetcher (rank >= 0), or asked for by the loader first (rank -1).
  struct Staged {
    uint32_t epoch = 0;
    int64_t rank = -1;
    bool ready = false;    // its bytes are in the buffer
    EventLoop::Fn waiter;  // the loader's read waiting for it
  };
  struct Stager {        // one rank's prefetcher
    uint32_t epoch = 0;  // of the next access to start
    size_t next = 0;     // its position in that epoch's accesses
    uint32_t busy = 0;   // fetches in flight (all of `epoch`)
    uint64_t used = 0;   // buffer bytes of accesses started and not taken
  };
  // Starts rank r's next accesses while it has threads and buffer for them.
  void Pump(uint64_t r);
  // The id of an access of `epoch` to compact id c on `node`: for the
  // loader, one it does not wait for yet; for a prefetcher, one no rank has
  // claimed (the loader asked first). 0 if none.
  uint64_t FindStaged(uint32_t node, uint32_t c, uint32_t epoch, bool loader) const;
  // The loader takes staged access `id`: its bytes leave the buffer.
  void Take(uint64_t id, uint32_t node, uint32_t c, EventLoop::Fn done);

  // An access's bytes in the staging buffer.
  uint64_t StagedBytes(uint64_t file) const {
    return spec_.sample_bytes > 0 ? spec_.sample_bytes : (*bytes_)[file];
  }

  uint32_t ranks_per_node_ = 1;
  double decode_seconds_ = 0;  // the job's file_seconds, spent by a prefetcher thread
  uint32_t epoch_ = 0;         // the job's
  // By epoch: the most accesses a rank's loader takes (the job steps as
  // often as its rank with the fewest batches can).
  std::vector<uint64_t> reads_per_epoch_;
  std::vector<Stager> stagers_;                  // by global rank
  std::unordered_map<uint64_t, Staged> staged_;  // by id, from 1
  // By node, compact id: the ids of its staged accesses.
  std::vector<std::unordered_map<uint32_t, std::vector<uint64_t>>> staged_ids_;
  uint64_t next_id_ = 1;

  EventLoop* loop_;
  SharedDevice* fs_;
  const std::vector<uint64_t>* bytes_;
  NopfsSpec spec_;
  NodeReads reads_;                      // each node's files, by compact id
  std::vector<std::vector<Tier>> tier_;  // by node, compact id: where it is kept
  std::vector<std::vector<char>> held_;  // by node, compact id: there now
  // By file: the two lowest numbered nodes that hold it (kNobody: fewer
  // hold it). Holder needs no more: whichever of them is not the reader.
  static constexpr uint32_t kNobody = UINT32_MAX;
  std::vector<std::array<uint32_t, 2>> holders_;
  std::vector<std::unique_ptr<SharedDevice>> ssd_, link_;
};

}  // namespace clairfs::sim
