// The daemon's first-use staging order (fs::FirstUseUnits, issue #28) over
// the simulator's files: the ranges of each pack the job reads in its first
// epoch, in the order any rank first reads them, as runs of a partition's
// files (small files taken together) or pieces of one large file.
//
// Built by laying the files out as clairfs-partition does (each pack's files
// back to back after its header, in the pack's order) in an in-memory
// manifest and calling the daemon's own function on it; the manifest is
// dropped before returning (about 100 bytes per file while it lives).
// Thread-compatible (no state).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/status.hpp"

namespace clairfs::sim {

struct FirstUseUnit {
  uint32_t partition;
  size_t begin, end;    // the files [begin, end) of the partition's, in its pack's order
  uint64_t bytes;       // the range's bytes: the files', or the piece's of one file
  bool piece;           // a piece of the one file begin (of at most `chunk` bytes), not all of it
  uint64_t offset = 0;  // a piece's first byte, from its file's start (a multiple of `chunk`)
};

// `partition_files[p]`: partition p's files in its pack's order (ids into
// `file_bytes`); `step[f]`: the position of file f's first read in the first
// epoch (prefetch::FirstReadsOf), UINT64_MAX if no rank reads it; `chunk`:
// the largest range. Every file read in the first epoch is in exactly one
// unit, or in the pieces of one file; the others in none.
Result<std::vector<FirstUseUnit>> FirstUseOrder(
    const std::vector<uint64_t>& file_bytes,
    const std::vector<std::vector<uint64_t>>& partition_files, const std::vector<uint64_t>& step,
    uint64_t chunk);

}  // namespace clairfs::sim
