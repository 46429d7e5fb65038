// Which ranks hold which partitions.
//
// Partition p is homed on rank p mod N; with K replicas it is also on ranks
// (p + 1) mod N ... (p + K - 1) mod N, so losing any K - 1 ranks loses no
// partition. The broadcast pack (p == P) is on every rank.
// Immutable; thread-safe.
#pragma once

#include <cstdint>
#include <vector>

namespace clairfs::fs {

class Ownership {
 public:
  Ownership(uint32_t partitions, uint32_t replicas, int ranks);

  // Ranks holding p, home first; for the broadcast pack every rank.
  std::vector<int> Owners(uint32_t p) const;
  bool Holds(int rank, uint32_t p) const;
  // Partitions (including the broadcast pack) that `rank` stages.
  std::vector<uint32_t> PartitionsOf(int rank) const;
  uint32_t replicas() const { return replicas_; }

 private:
  const uint32_t partitions_;
  const uint32_t replicas_;  // clamped to the number of ranks
  const int ranks_;
};

}  // namespace clairfs::fs
