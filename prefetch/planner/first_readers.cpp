#include "prefetch/planner/first_readers.hpp"

#include <cstdint>

namespace clairfs::prefetch {

FirstReads FirstReadsOf(const std::vector<std::vector<Index>>& orders,
                        const std::vector<int>& node_of, const std::vector<FileId>& file_of_index,
                        size_t files) {
  FirstReads reads{std::vector<int>(files, -1), std::vector<uint64_t>(files, UINT64_MAX)};
  std::vector<uint64_t>& step = reads.step;
  std::vector<int>& first = reads.node;
  for (size_t k = 0; k < orders.size() && k < node_of.size(); ++k) {
    const std::vector<Index>& order = orders[k];
    for (uint64_t i = 0; i < order.size(); ++i) {
      if (order[i] >= file_of_index.size() || file_of_index[order[i]] == kNoFile) continue;
      const FileId f = file_of_index[order[i]];
      if (f < files && (i < step[f] || (i == step[f] && node_of[k] < first[f]))) {
        step[f] = i;
        first[f] = node_of[k];
      }
    }
  }
  return reads;
}

std::vector<int> FirstReadingNodes(const std::vector<std::vector<Index>>& orders,
                                   const std::vector<int>& node_of,
                                   const std::vector<FileId>& file_of_index, size_t files) {
  return FirstReadsOf(orders, node_of, file_of_index, files).node;
}

}  // namespace clairfs::prefetch
