#include "prefetch/planner/match_epoch.hpp"

#include <algorithm>
#include <unordered_map>

namespace clairfs::prefetch {

EpochMatch MatchEpoch(const std::vector<std::vector<FileId>>& slots,
                      const std::vector<FileId>& opened, uint64_t span) {
  std::unordered_map<FileId, std::vector<std::pair<uint32_t, uint64_t>>> occ;
  for (FileId f : opened) occ[f];
  for (uint32_t g = 0; g < slots.size(); ++g) {
    for (uint64_t k = 0; k < slots[g].size(); ++k) {
      auto it = occ.find(slots[g][k]);
      if (it != occ.end()) it->second.emplace_back(g, k);
    }
  }
  std::vector<FileId> distinct;
  for (auto r = opened.rbegin(); r != opened.rend(); ++r) {
    if (std::find(distinct.begin(), distinct.end(), *r) == distinct.end()) distinct.push_back(*r);
  }
  EpochMatch best;
  for (FileId anchor : distinct) {
    for (const auto& [g0, k0] : occ[anchor]) {
      EpochMatch m;
      for (FileId f : distinct) {
        for (const auto& [g, k] : occ[f]) {
          if (k + span >= k0 && k <= k0 + span) {
            m.entries.emplace_back(g, k);
            ++m.score;
            break;
          }
        }
      }
      if (m.score > best.score) best = std::move(m);
    }
  }
  return best;
}

}  // namespace clairfs::prefetch
