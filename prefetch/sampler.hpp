// Sampler: the interface of every access-order generator.
//
// A Sampler answers, for a training rank and an epoch, which dataset indices
// that rank reads and in which order - the indices a framework sampler would
// yield, before batching. Indices refer to a DatasetIndex (dataset_index.hpp)
// that maps them to paths. Implementations are immutable after construction, so
// every const method is thread-safe; Order() may be called for any (rank, epoch)
// in any order and always returns the same answer.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "partitioner/format/status.hpp"

namespace clairfs::prefetch {

// Position of a sample in the framework's dataset (ImageFolder index and the like).
using Index = uint64_t;

class Sampler {
 public:
  virtual ~Sampler() = default;

  // Number of training ranks (num_replicas); 1 for single-process samplers.
  virtual uint64_t world_size() const = 0;

  // Length of the dataset the indices point into.
  virtual uint64_t dataset_size() const = 0;

  // The indices rank `rank` reads in epoch `epoch`, in read order.
  // InvalidArgument when rank >= world_size(); NotFound when the sampler has no
  // order for that epoch (an order file that does not cover it).
  virtual Result<std::vector<Index>> Order(uint64_t rank, uint64_t epoch) const = 0;

  // Order() for several ranks of one epoch (a node's local ranks); element i
  // belongs to ranks[i]. Samplers that share work across ranks override it.
  virtual Result<std::vector<std::vector<Index>>> OrderRanks(const std::vector<uint64_t>& ranks,
                                                             uint64_t epoch) const {
    std::vector<std::vector<Index>> out;
    out.reserve(ranks.size());
    for (uint64_t r : ranks) {
      Result<std::vector<Index>> one = Order(r, epoch);
      if (!one.ok()) return one.status();
      out.push_back(std::move(one).value());
    }
    return out;
  }
};

}  // namespace clairfs::prefetch
