// NoPFSSource: NoPFS / HDMLP's design (REFERENCE.md section 2) as a policy.
// Knowing every epoch's order, each node counts how often its ranks will read
// each file over the whole job and assigns the most-read files to its RAM,
// the next to its SSD (up to their capacities; ties: the file read first
// first). Placement is static, nothing is evicted. A tier is filled as its
// files are first read (from the shared file system or from a node that
// already holds them: the cheapest source); later reads take the file from
// the node's own tier, else from a node that holds it, else from the shared
// file system. NoPFS's own prefetcher is not modelled (the job's loader
// reads ahead as in every policy). A node's tiers are kept for the files it
// reads (NodeReads), not for the whole dataset. Single-thread.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
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
};

class NopfsSource final : public DataSource {
 public:
  // Reads every epoch's order from `sampler` now (to count accesses).
  static Result<std::unique_ptr<NopfsSource>> Create(EventLoop* loop, SharedDevice* shared_fs,
                                                     const std::vector<uint64_t>* file_bytes,
                                                     const prefetch::Sampler& sampler,
                                                     const JobSpec& job, const NopfsSpec& spec);
  void Read(uint32_t node, uint64_t file, EventLoop::Fn done) override;

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
