#include "fs/dist/ownership.hpp"

#include <algorithm>

namespace clairfs::fs {

Ownership::Ownership(uint32_t partitions, uint32_t replicas, int ranks)
    : partitions_(partitions),
      replicas_(std::clamp<uint32_t>(replicas, 1, static_cast<uint32_t>(std::max(ranks, 1)))),
      ranks_(std::max(ranks, 1)) {}

std::vector<int> Ownership::Owners(uint32_t p) const {
  std::vector<int> out;
  if (p >= partitions_) {
    for (int r = 0; r < ranks_; ++r) out.push_back(r);
    return out;
  }
  for (uint32_t j = 0; j < replicas_; ++j) out.push_back(static_cast<int>((p + j) % ranks_));
  return out;
}

bool Ownership::Holds(int rank, uint32_t p) const {
  if (p >= partitions_) return true;
  // rank holds p when (rank - p) mod N < K.
  const uint32_t d =
      static_cast<uint32_t>(((rank - static_cast<int64_t>(p % ranks_)) % ranks_ + ranks_) % ranks_);
  return d < replicas_;
}

std::vector<uint32_t> Ownership::PartitionsOf(int rank) const {
  std::vector<uint32_t> out;
  for (uint32_t p = 0; p <= partitions_; ++p) {
    if (Holds(rank, p)) out.push_back(p);
  }
  return out;
}

}  // namespace clairfs::fs
