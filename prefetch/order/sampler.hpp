// Sampler: the interface of every access-order generator.
//
// A Sampler answers, for a training rank and an epoch, which dataset indices
// that rank reads and in which order - the indices a framework sampler would
// yield, before batching. Indices refer to a DatasetIndex (dataset_index.hpp)
// that maps them to paths. Implementations are immutable after construction, so
// every const method is thread-safe; Order() may be called for any (rank, epoch)
// in any order and always returns the same answer.
//
// Some frameworks fix the files of every batch but run the batches of an epoch
// in an order nobody can know (Keras fit(shuffle=True) draws it from Python's
// unseeded `random`). Such a sampler also answers Batches(): the epoch as a
// set of batches. Order() then still lists the batches in batch-index order,
// which is a listing, not a read order.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "base/status.hpp"

namespace clairfs::prefetch {

// Position of a sample in the framework's dataset (ImageFolder index and the like).
using Index = uint64_t;

// An epoch whose batches run in an unknown order (Sampler::Batches).
struct BatchEpoch {
  // Read first, in this order, before any candidate (Keras fit reads its
  // tensor-spec batches before epoch 0); usually empty.
  std::vector<std::vector<Index>> lead;
  // The candidate batches, each one's indices exact; their order means nothing.
  std::vector<std::vector<Index>> batches;
  // Batch reads the epoch makes after the lead, each a different candidate
  // read whole: batches.size() when every candidate is read, fewer when the
  // epoch reads only some of them (which ones is unknown).
  uint64_t reads = 0;
  // Empty, or for each of `batches` the alternative it belongs to (0, 1,
  // ...): the epoch reads the batches of one alternative only, which one
  // being unknown (Keras: one of several candidate index arrays). `reads`
  // counts reads within that alternative.
  std::vector<uint32_t> alternative;
};

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

  // The epoch as a set of batches when their order is unknowable; nullopt
  // (the default) when Order() is the read order. Errors as Order().
  virtual Result<std::optional<BatchEpoch>> Batches(uint64_t rank, uint64_t epoch) const {
    (void)rank;
    (void)epoch;
    return std::optional<BatchEpoch>();
  }
};

}  // namespace clairfs::prefetch
