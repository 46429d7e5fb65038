// What an epoch of a sampler's order reads, over every rank: the bytes the
// simulator's sources must account for.
#pragma once

#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

#include "prefetch/order/sampler.hpp"

namespace clairfs::sim::testing {

inline uint64_t OrderBytes(const prefetch::Sampler& sampler, uint64_t epoch,
                           const std::vector<uint64_t>& file_bytes) {
  uint64_t sum = 0;
  for (uint64_t rank = 0; rank < sampler.world_size(); ++rank) {
    auto order = sampler.Order(rank, epoch);
    REQUIRE(order.ok());
    for (auto i : *order) sum += file_bytes[i];
  }
  return sum;
}

}  // namespace clairfs::sim::testing
