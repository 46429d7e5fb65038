#include "prefetch/order/order_file_sampler.hpp"

#include <algorithm>
#include <string_view>
#include <unordered_map>

namespace clairfs::prefetch {

namespace {
std::string Where(const std::pair<uint64_t, uint64_t>& key) {
  return "epoch " + std::to_string(key.first) + " rank " + std::to_string(key.second);
}
}  // namespace

Result<OrderFileSampler> OrderFileSampler::Create(const OrderFile& order,
                                                  const DatasetIndex* dataset) {
  OrderFileSampler s;
  s.world_size_ = order.EffectiveWorldSize();
  if (order.entries == OrderFile::Entries::kIndices) {
    Index max_seen = 0;
    for (const auto& [key, section] : order.sections) {
      for (Index i : section.indices) {
        if (dataset != nullptr && i >= dataset->size()) {
          return Status::InvalidArgument("order file " + Where(key) + ": index " +
                                         std::to_string(i) + " is outside the dataset of " +
                                         std::to_string(dataset->size()) + " files");
        }
        max_seen = std::max(max_seen, i + 1);
      }
      s.sections_[key] = section.indices;
    }
    s.dataset_size_ = dataset != nullptr ? dataset->size() : max_seen;
    return s;
  }

  std::unordered_map<std::string_view, Index> lookup;
  const DatasetIndex* target = dataset != nullptr ? dataset : &s.own_index_;
  if (dataset != nullptr) {
    lookup.reserve(dataset->paths.size());
    for (Index i = 0; i < dataset->paths.size(); ++i) lookup.emplace(dataset->paths[i], i);
  }
  for (const auto& [key, section] : order.sections) {
    std::vector<Index>& out = s.sections_[key];
    out.reserve(section.paths.size());
    for (const std::string& p : section.paths) {
      auto it = lookup.find(p);
      if (it == lookup.end()) {
        if (dataset != nullptr) {
          return Status::NotFound("order file " + Where(key) + ": '" + p +
                                  "' is not a file of the dataset");
        }
        // Own index: the map's keys view into order.sections, which outlives this loop.
        Index next = s.own_index_.paths.size();
        s.own_index_.paths.push_back(p);
        s.own_index_.labels.push_back(0);
        it = lookup.emplace(std::string_view(p), next).first;
      }
      out.push_back(it->second);
    }
  }
  s.dataset_size_ = target->size();
  return s;
}

Result<std::vector<Index>> OrderFileSampler::Order(uint64_t rank, uint64_t epoch) const {
  if (rank >= world_size_) {
    return Status::InvalidArgument("order file: rank " + std::to_string(rank) +
                                   " is not below its world size " + std::to_string(world_size_));
  }
  auto it = sections_.find({epoch, rank});
  if (it == sections_.end()) {
    return Status::NotFound("order file has no section for epoch " + std::to_string(epoch) +
                            " rank " + std::to_string(rank));
  }
  return it->second;
}

std::vector<uint64_t> OrderFileSampler::EpochsOf(uint64_t rank) const {
  std::vector<uint64_t> epochs;
  for (const auto& [key, indices] : sections_) {
    if (key.second == rank) epochs.push_back(key.first);
  }
  return epochs;
}

}  // namespace clairfs::prefetch
