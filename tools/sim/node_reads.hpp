// NodeReads: what each simulated node reads over the whole job, in compact
// file ids of its own.
//
// The simulator knows every epoch's order up front. For each node it lists
// the dataset files its ranks read in any epoch, ascending, and numbers them
// 0..k-1 (compact id c is Files(node)[c]); each epoch's order of each of the
// node's ranks is kept in those ids. A node's per-file state (the planner's,
// NoPFS's tiers) is then held for its k files, not for the whole dataset: k is
// about min(files, epochs x files / nodes), so over all nodes the state is
// O(files x epochs), not O(files x nodes). Numbering in ascending order keeps
// the files' relative order, so a policy that breaks ties by file id does so
// alike in either numbering.
//
// Memory: 4 bytes per file of each node's list plus 4 bytes per entry of
// every epoch's order (epochs x dataset, for all nodes together); building it
// takes one epoch's order of every rank at a time (8 bytes per entry) and 4
// bytes per dataset file. Immutable once built; thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.hpp"
#include "prefetch/order/sampler.hpp"
#include "prefetch/planner/planner_config.hpp"
#include "tools/sim/job.hpp"

namespace clairfs::sim {

class NodeReads {
 public:
  // Reads each of the job's epochs once from `sampler` (every rank's order
  // together). Rank r runs on node r / ranks_per_node. InvalidArgument when
  // the dataset has 2^32 - 1 files or more (the planner's file ids); the
  // sampler's error as it is.
  static Result<NodeReads> Build(const prefetch::Sampler& sampler, const JobSpec& job);

  uint32_t nodes() const { return static_cast<uint32_t>(files_.size()); }
  uint32_t epochs() const { return epochs_; }
  // The dataset files `node` reads, ascending: compact id c is element c.
  const std::vector<uint32_t>& Files(uint32_t node) const { return files_[node]; }
  // `file`'s compact id on `node`; prefetch::kNoFile when the node never
  // reads it. O(log k).
  prefetch::FileId Find(uint32_t node, uint64_t file) const;
  // Local rank g's (the node's g-th rank) order in `epoch`, in compact ids.
  const std::vector<uint32_t>& Order(uint32_t node, uint32_t epoch, uint32_t g) const {
    return orders_[node][static_cast<size_t>(epoch) * ranks_per_node_ + g];
  }
  // An order source for `node`'s planner: the orders of its ranks (global
  // ranks, as BlockLocalRanks gives them) in compact ids; NotFound for an
  // epoch the job does not run, InvalidArgument for another node's rank.
  // This object must outlive every use of the result.
  prefetch::OrderSource OrderSourceOf(uint32_t node) const;

 private:
  uint32_t ranks_per_node_ = 1;
  uint32_t epochs_ = 0;
  std::vector<std::vector<uint32_t>> files_;  // by node
  // By node, then epoch x ranks_per_node + local rank (empty past the world).
  std::vector<std::vector<std::vector<uint32_t>>> orders_;
};

}  // namespace clairfs::sim
