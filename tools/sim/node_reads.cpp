#include "tools/sim/node_reads.hpp"

#include <algorithm>
#include <string>
#include <utility>

namespace clairfs::sim {

Result<NodeReads> NodeReads::Build(const prefetch::Sampler& sampler, const JobSpec& job) {
  const uint64_t files = sampler.dataset_size();
  if (files >= prefetch::kNoFile) {
    return Status::InvalidArgument("the planner numbers at most 2^32 - 2 files");
  }
  NodeReads r;
  r.ranks_per_node_ = std::max(job.ranks_per_node, 1u);
  r.epochs_ = job.epochs;
  const uint64_t world = sampler.world_size();
  std::vector<uint64_t> all(world);
  for (uint64_t k = 0; k < world; ++k) all[k] = k;
  r.files_.resize(job.nodes);
  r.orders_.resize(job.nodes);
  for (auto& o : r.orders_) o.resize(static_cast<size_t>(job.epochs) * r.ranks_per_node_);
  // First in dataset indices: one epoch of every rank at a time.
  for (uint32_t e = 0; e < job.epochs; ++e) {
    auto orders = sampler.OrderRanks(all, e);
    if (!orders.ok()) return orders.status();
    for (uint64_t k = 0; k < world; ++k) {
      const uint64_t node = k / r.ranks_per_node_;
      if (node >= job.nodes) break;
      const std::vector<prefetch::Index>& order = (*orders)[k];
      std::vector<uint32_t>& out =
          r.orders_[node][static_cast<size_t>(e) * r.ranks_per_node_ + k % r.ranks_per_node_];
      out.reserve(order.size());
      for (prefetch::Index i : order) {
        if (i >= files) return Status::InvalidArgument("the order reads a file beyond the dataset");
        out.push_back(static_cast<uint32_t>(i));
      }
    }
  }
  // Then each node's files, and its orders renumbered through one table by
  // dataset file that only the node's own files are written to and read from
  // (no clearing between nodes: O(k) each).
  std::vector<uint32_t> compact(files);
  for (uint32_t n = 0; n < job.nodes; ++n) {
    std::vector<uint32_t>& mine = r.files_[n];
    for (const auto& order : r.orders_[n]) mine.insert(mine.end(), order.begin(), order.end());
    std::sort(mine.begin(), mine.end());
    mine.erase(std::unique(mine.begin(), mine.end()), mine.end());
    mine.shrink_to_fit();
    for (uint32_t c = 0; c < mine.size(); ++c) compact[mine[c]] = c;
    for (auto& order : r.orders_[n]) {
      for (uint32_t& i : order) i = compact[i];
    }
  }
  return r;
}

prefetch::FileId NodeReads::Find(uint32_t node, uint64_t file) const {
  const std::vector<uint32_t>& mine = files_[node];
  auto it = std::lower_bound(mine.begin(), mine.end(), file);
  if (it == mine.end() || *it != file) return prefetch::kNoFile;
  return static_cast<prefetch::FileId>(it - mine.begin());
}

prefetch::OrderSource NodeReads::OrderSourceOf(uint32_t node) const {
  return [this, node](const std::vector<uint64_t>& ranks,
                      uint64_t epoch) -> Result<std::vector<std::vector<prefetch::Index>>> {
    if (epoch >= epochs_) {
      return Status::NotFound("epoch " + std::to_string(epoch) + " is not run");
    }
    std::vector<std::vector<prefetch::Index>> out;
    out.reserve(ranks.size());
    for (uint64_t rank : ranks) {
      const uint64_t first = static_cast<uint64_t>(node) * ranks_per_node_;
      if (rank < first || rank >= first + ranks_per_node_) {
        return Status::InvalidArgument("rank " + std::to_string(rank) + " is not on node " +
                                       std::to_string(node));
      }
      const std::vector<uint32_t>& order =
          Order(node, static_cast<uint32_t>(epoch), static_cast<uint32_t>(rank - first));
      out.emplace_back(order.begin(), order.end());
    }
    return out;
  };
}

}  // namespace clairfs::sim
