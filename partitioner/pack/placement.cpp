#include "partitioner/pack/placement.hpp"

#include <algorithm>
#include <numeric>
#include <queue>
#include <tuple>

#include "partitioner/format/checksum.hpp"

namespace clairfs::pack {

std::vector<uint32_t> BalancedPlacement::Assign(const std::vector<PlacedFile>& files,
                                                uint32_t partitions) const {
  std::vector<uint32_t> order(files.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return files[a].size > files[b].size; });
  using Load = std::tuple<uint64_t, uint64_t, uint32_t>;  // bytes, files, partition
  std::priority_queue<Load, std::vector<Load>, std::greater<Load>> heap;
  for (uint32_t p = 0; p < partitions; ++p) heap.emplace(0, 0, p);
  std::vector<uint32_t> out(files.size());
  for (uint32_t f : order) {
    auto [bytes, count, p] = heap.top();
    heap.pop();
    out[f] = p;
    heap.emplace(bytes + files[f].size, count + 1, p);
  }
  return out;
}

std::vector<uint32_t> HashPlacement::Assign(const std::vector<PlacedFile>& files,
                                            uint32_t partitions) const {
  std::vector<uint32_t> out(files.size());
  for (size_t i = 0; i < files.size(); ++i) {
    out[i] = static_cast<uint32_t>(format::Checksum(files[i].path.data(), files[i].path.size()) %
                                   partitions);
  }
  return out;
}

std::vector<uint32_t> ContiguousPlacement::Assign(const std::vector<PlacedFile>& files,
                                                  uint32_t partitions) const {
  uint64_t total = 0;
  for (const PlacedFile& f : files) total += f.size;
  std::vector<uint32_t> out(files.size());
  if (total == 0) {  // all empty: cut by count instead
    for (size_t i = 0; i < files.size(); ++i) {
      out[i] = static_cast<uint32_t>(i * partitions / files.size());
    }
    return out;
  }
  // A file goes where the middle of its byte range falls (long double: exact
  // enough for placement, and cannot overflow).
  long double before = 0;
  for (size_t i = 0; i < files.size(); ++i) {
    const long double mid = before + files[i].size / 2.0L;
    out[i] = std::min<uint32_t>(partitions - 1, static_cast<uint32_t>(mid * partitions / total));
    before += files[i].size;
  }
  return out;
}

Result<std::unique_ptr<PlacementPolicy>> MakePlacement(const std::string& name) {
  if (name == "balanced") return std::unique_ptr<PlacementPolicy>(new BalancedPlacement());
  if (name == "hash") return std::unique_ptr<PlacementPolicy>(new HashPlacement());
  if (name == "contiguous") return std::unique_ptr<PlacementPolicy>(new ContiguousPlacement());
  return Status::InvalidArgument("unknown placement '" + name +
                                 "' (expected balanced, hash or contiguous)");
}

}  // namespace clairfs::pack
