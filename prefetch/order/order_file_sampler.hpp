// OrderFileSampler: a Sampler that replays an order file.
//
// Path entries are mapped to indices of a DatasetIndex: the one given (a path
// missing from it is an error), or, without one, an index built from the
// file's own distinct paths in order of first appearance. Index entries are
// checked against the given dataset's size. Order() answers NotFound for a
// (rank, epoch) the file has no section for. Immutable after Create;
// thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "base/status.hpp"
#include "prefetch/order/dataset_index.hpp"
#include "prefetch/order/order_file.hpp"
#include "prefetch/order/sampler.hpp"

namespace clairfs::prefetch {

class OrderFileSampler final : public Sampler {
 public:
  // `dataset` may be null. Errors: NotFound for a path not in `dataset`,
  // InvalidArgument for an index >= dataset size.
  static Result<OrderFileSampler> Create(const OrderFile& order, const DatasetIndex* dataset);

  uint64_t world_size() const override { return world_size_; }
  uint64_t dataset_size() const override { return dataset_size_; }
  Result<std::vector<Index>> Order(uint64_t rank, uint64_t epoch) const override;

  // Epochs the file covers for `rank`, ascending.
  std::vector<uint64_t> EpochsOf(uint64_t rank) const;
  // Without a given dataset and with path entries: the paths the indices
  // refer to. Empty otherwise.
  const DatasetIndex& own_index() const { return own_index_; }

 private:
  OrderFileSampler() = default;

  uint64_t world_size_ = 0;
  uint64_t dataset_size_ = 0;
  std::map<std::pair<uint64_t, uint64_t>, std::vector<Index>> sections_;  // (epoch, rank)
  DatasetIndex own_index_;
};

}  // namespace clairfs::prefetch
