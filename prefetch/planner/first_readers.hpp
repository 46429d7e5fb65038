// Which node reads each file first in an epoch: what the daemon homes
// partitions by (fs::PlaceByReader) and the simulator too.
#pragma once

#include <cstddef>
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
std::vector<int> FirstReadingNodes(const std::vector<std::vector<Index>>& orders,
                                   const std::vector<int>& node_of,
                                   const std::vector<FileId>& file_of_index, size_t files);

}  // namespace clairfs::prefetch
