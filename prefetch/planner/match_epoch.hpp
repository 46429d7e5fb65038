// MatchEpoch: where a set of opened files sits in one epoch's per-slot
// orders. The resync search (planner_resync.cpp) and the daemon's check of
// its settings against the job's opens (fs/clairfsd/settings_diagnosis.hpp)
// score candidate epochs with it. Pure; thread-safe.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "prefetch/planner/planner_config.hpp"

namespace clairfs::prefetch {

struct EpochMatch {
  uint64_t score = 0;  // distinct opened files found near the anchor
  std::vector<std::pair<uint32_t, uint64_t>> entries;  // (slot, offset) per file found
};

// Anchors on each occurrence of an opened file (newest file first) and counts
// the distinct files of `opened` that occur within `span` entries of it in
// any slot: the local ranks move together, so a true position collects them
// all. Returns the best anchor's match (score 0 when none occurs).
EpochMatch MatchEpoch(const std::vector<std::vector<FileId>>& slots,
                      const std::vector<FileId>& opened, uint64_t span);

}  // namespace clairfs::prefetch
