// Which ranks hold which partitions.
//
// Partition p is homed on rank home(p): p mod N by default, or where the job
// reads it first (PlaceByReader). With K replicas it is also on ranks
// home + 1 ... home + K - 1 (mod N), so losing any K - 1 ranks loses no
// partition. The broadcast pack (p == P) is on every rank.
// Immutable; thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "partitioner/format/manifest.hpp"

namespace clairfs::fs {

class Ownership {
 public:
  // `homes`: each partition's home rank (all in [0, ranks)); empty: p mod N.
  Ownership(uint32_t partitions, uint32_t replicas, int ranks, std::vector<int> homes = {});

  // Ranks holding p, home first; for the broadcast pack every rank.
  std::vector<int> Owners(uint32_t p) const;
  bool Holds(int rank, uint32_t p) const;
  // Partitions (including the broadcast pack) that `rank` stages.
  std::vector<uint32_t> PartitionsOf(int rank) const;
  uint32_t replicas() const { return replicas_; }

 private:
  int Home(uint32_t p) const {
    return homes_.empty() ? static_cast<int>(p % static_cast<uint32_t>(ranks_)) : homes_[p];
  }

  const uint32_t partitions_;
  const uint32_t replicas_;  // clamped to the number of ranks
  const int ranks_;
  const std::vector<int> homes_;
};

// Homes that follow the job's reads: each partition on the rank that reads
// most of its bytes first, at most ceil(P / N) partitions per rank (staging
// stays spread), the rest where p mod N puts them if there is room.
// `first_reader[node]` is the rank that opens manifest node `node` first in
// the job's first epoch, or -1 (no rank reads it, or unknown).
struct Placement {
  std::vector<int> homes;           // per partition; empty: p mod N
  uint64_t peer_bytes = 0;          // first reads of a file homed on another rank, with `homes`
  uint64_t default_peer_bytes = 0;  // the same with p mod N
  uint32_t moved = 0;               // partitions not on rank p mod N
};
Placement PlaceByReader(const format::Manifest& manifest, int ranks,
                        const std::vector<int>& first_reader);
// The same from `first[p][r]`, the bytes of partition p that rank r reads
// first.
Placement PlaceByReader(const std::vector<std::vector<uint64_t>>& first, int ranks);
// The same from that table's nonzero entries alone, each (partition, rank)
// at most once: memory by the entries, not partitions x ranks (the
// simulator's thousands of nodes). Entries of a rank or partition out of
// range, or of 0 bytes, are ignored.
struct FirstBytes {
  uint32_t partition = 0;
  int rank = 0;
  uint64_t bytes = 0;
};
Placement PlaceByReader(const std::vector<FirstBytes>& first, uint32_t partitions, int ranks);

}  // namespace clairfs::fs
