// Which node reads each file first in an epoch, and when: what the daemon
// homes partitions by (fs::PlaceByReader) and stages them in the order of
// (fs::Stager::FirstUse), and the simulator too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "prefetch/order/sampler.hpp"
#include "prefetch/planner/planner_config.hpp"

namespace clairfs::prefetch {

// Per file id below `files`: the node of the rank that reads it first, -1
// if none does. orders[k] is rank k's order of dataset indices in the epoch
// and node_of[k] its node; every rank reads at the same pace, so the first
// is the earliest position in an order, a tie going to the lower node.
// Indices without a file (file_of_index beyond its end, or kNoFile) are
// skipped.
struct FirstReads {
  std::vector<int> node;       // per file: the first reader's node, or -1
  std::vector<uint64_t> step;  // per file: that read's position, or UINT64_MAX
};
FirstReads FirstReadsOf(const std::vector<std::vector<Index>>& orders,
                        const std::vector<int>& node_of, const std::vector<FileId>& file_of_index,
                        size_t files);
// FirstReadsOf(...).node.
std::vector<int> FirstReadingNodes(const std::vector<std::vector<Index>>& orders,
                                   const std::vector<int>& node_of,
                                   const std::vector<FileId>& file_of_index, size_t files);

}  // namespace clairfs::prefetch
