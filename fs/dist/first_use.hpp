// The job's first-use order over a rank's packs: which ranges of them its
// first epoch reads, in the order it first reads them. What staging copies
// first (fs::Stager::FirstUse), and the simulator too (tools/sim).
#pragma once

#include <cstdint>
#include <vector>

#include "partitioner/format/manifest.hpp"

namespace clairfs::fs {

// When the job first reads a file: `step` in its first epoch.
struct FileStep {
  uint32_t node;
  uint64_t step;
  bool operator==(const FileStep&) const = default;
};

// The files of `step` (per manifest node, UINT64_MAX: not read) that are read.
std::vector<FileStep> FileSteps(const std::vector<uint64_t>& step);

// A range of a pack, copied ahead of the packs' turns because the job reads
// it at `step` of its first epoch.
struct StageUnit {
  uint64_t step;
  uint32_t partition;
  uint64_t offset, size;
  bool operator==(const StageUnit&) const = default;
};

// FirstUseUnits takes files smaller than this together: a shared file
// system pays per request as well as per byte, and the prefetcher fetches
// the job's next files one by one anyway. Chosen on measurements
// (docs/benchmarks.md, "Staging in the job's first-use order"): DLIO's
// 256 KiB files one by one made the first epoch 1.04-1.07x longer than
// staging in pack order, taken 4 together 0.94-0.95x.
inline constexpr uint64_t kFirstUseMinRead = 1u << 20;

// The ranges of `partitions`' packs that the job reads in its first epoch,
// in the order it first reads them: `step` per manifest node (UINT64_MAX:
// no rank reads it), a tie in partition and offset order. A file of at least
// kFirstUseMinRead bytes is a range of its own, cut into pieces of at most
// `chunk`; a smaller one is taken with its neighbours in the pack until the
// range holds kFirstUseMinRead bytes (or `chunk`), at the earliest step among
// them (with a `chunk` below kFirstUseMinRead, `chunk` takes its place).
// Files no rank reads are left to their packs' turns.
std::vector<StageUnit> FirstUseUnits(const format::Manifest& manifest,
                                     const std::vector<uint32_t>& partitions,
                                     const std::vector<uint64_t>& step, uint64_t chunk);

}  // namespace clairfs::fs
