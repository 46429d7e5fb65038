#include "fs/dist/ownership.hpp"

#include <algorithm>
#include <tuple>

namespace clairfs::fs {

Ownership::Ownership(uint32_t partitions, uint32_t replicas, int ranks, std::vector<int> homes)
    : partitions_(partitions),
      replicas_(std::clamp<uint32_t>(replicas, 1, static_cast<uint32_t>(std::max(ranks, 1)))),
      ranks_(std::max(ranks, 1)),
      homes_(homes.size() == partitions ? std::move(homes) : std::vector<int>()) {}

std::vector<int> Ownership::Owners(uint32_t p) const {
  std::vector<int> out;
  if (p >= partitions_) {
    for (int r = 0; r < ranks_; ++r) out.push_back(r);
    return out;
  }
  for (uint32_t j = 0; j < replicas_; ++j) out.push_back((Home(p) + static_cast<int>(j)) % ranks_);
  return out;
}

bool Ownership::Holds(int rank, uint32_t p) const {
  if (p >= partitions_) return true;
  // rank holds p when (rank - home) mod N < K.
  const uint32_t d = static_cast<uint32_t>(((rank - Home(p)) % ranks_ + ranks_) % ranks_);
  return d < replicas_;
}

std::vector<uint32_t> Ownership::PartitionsOf(int rank) const {
  std::vector<uint32_t> out;
  for (uint32_t p = 0; p <= partitions_; ++p) {
    if (Holds(rank, p)) out.push_back(p);
  }
  return out;
}

Placement PlaceByReader(const format::Manifest& manifest, int ranks,
                        const std::vector<int>& first_reader) {
  const uint32_t parts = manifest.partition_count();
  const int n = std::max(ranks, 1);
  // Bytes of each partition each rank reads first.
  std::vector<std::vector<uint64_t>> first(parts, std::vector<uint64_t>(n, 0));
  for (uint32_t f = 0; f < manifest.node_count() && f < first_reader.size(); ++f) {
    const int r = first_reader[f];
    if (r < 0 || r >= n || manifest.IsDirectory(f)) continue;
    const uint32_t p = manifest.node(f).partition;
    if (p < parts) first[p][r] += manifest.node(f).size;
  }
  return PlaceByReader(first, n);
}

Placement PlaceByReader(const std::vector<std::vector<uint64_t>>& first, int ranks) {
  const auto parts = static_cast<uint32_t>(first.size());
  const int n = std::max(ranks, 1);
  // A row shorter than `ranks` counts 0 for the ranks it lacks; a longer
  // one's extra ranks are not counted.
  std::vector<FirstBytes> entries;
  for (uint32_t p = 0; p < parts; ++p) {
    for (int r = 0; r < n && static_cast<size_t>(r) < first[p].size(); ++r) {
      if (first[p][r] > 0) entries.push_back({p, r, first[p][r]});
    }
  }
  return PlaceByReader(entries, parts, n);
}

Placement PlaceByReader(const std::vector<FirstBytes>& first, uint32_t parts, int ranks) {
  const int n = std::max(ranks, 1);
  // The strongest preferences first; a rank takes at most ceil(P / N).
  std::vector<std::tuple<uint64_t, uint32_t, int>> wishes;  // bytes, partition, rank
  for (const FirstBytes& e : first) {
    if (e.bytes > 0 && e.partition < parts && e.rank >= 0 && e.rank < n) {
      wishes.emplace_back(e.bytes, e.partition, e.rank);
    }
  }
  std::sort(wishes.begin(), wishes.end(), [](const auto& a, const auto& b) {
    return std::get<0>(a) != std::get<0>(b) ? std::get<0>(a) > std::get<0>(b) : a < b;
  });
  const uint32_t cap = (parts + static_cast<uint32_t>(n) - 1) / static_cast<uint32_t>(n);
  Placement out;
  out.homes.assign(parts, -1);
  std::vector<uint32_t> load(n, 0);
  for (const auto& [bytes, p, r] : wishes) {
    if (out.homes[p] >= 0 || load[r] >= cap) continue;
    out.homes[p] = r;
    ++load[r];
  }
  for (uint32_t p = 0; p < parts; ++p) {  // nobody's first: p mod N, else the least loaded
    if (out.homes[p] >= 0) continue;
    int r = static_cast<int>(p % static_cast<uint32_t>(n));
    if (load[r] >= cap)
      r = static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());
    out.homes[p] = r;
    ++load[r];
  }
  for (uint32_t p = 0; p < parts; ++p) {
    if (out.homes[p] != static_cast<int>(p % static_cast<uint32_t>(n))) ++out.moved;
  }
  for (const auto& [bytes, p, r] : wishes) {
    if (r != out.homes[p]) out.peer_bytes += bytes;
    if (r != static_cast<int>(p % static_cast<uint32_t>(n))) out.default_peer_bytes += bytes;
  }
  return out;
}

}  // namespace clairfs::fs
