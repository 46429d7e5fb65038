// Placement policies: which partition each file is stored in.
// Policies are stateless; thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.hpp"

namespace clairfs::pack {

struct PlacedFile {
  std::string_view path;  // relative to the source root
  uint64_t size;
};

class PlacementPolicy {
 public:
  virtual ~PlacementPolicy() = default;
  // Returns the partition in [0, partitions) of each file; files are given in
  // manifest order (breadth-first, sorted).
  virtual std::vector<uint32_t> Assign(const std::vector<PlacedFile>& files,
                                       uint32_t partitions) const = 0;
};

// Bytes balanced: largest file first onto the partition holding the fewest
// bytes (ties: fewest files, then lowest index). Default.
class BalancedPlacement final : public PlacementPolicy {
 public:
  std::vector<uint32_t> Assign(const std::vector<PlacedFile>& files,
                               uint32_t partitions) const override;
};

// XXH3 of the relative path modulo P: a file's partition depends on its path
// alone, so adding files moves no others.
class HashPlacement final : public PlacementPolicy {
 public:
  std::vector<uint32_t> Assign(const std::vector<PlacedFile>& files,
                               uint32_t partitions) const override;
};

// The file list in manifest order cut into P contiguous runs of about equal
// bytes (FanStore's layout: neighbours in a directory share a partition).
class ContiguousPlacement final : public PlacementPolicy {
 public:
  std::vector<uint32_t> Assign(const std::vector<PlacedFile>& files,
                               uint32_t partitions) const override;
};

// "balanced", "hash" or "contiguous".
Result<std::unique_ptr<PlacementPolicy>> MakePlacement(const std::string& name);

}  // namespace clairfs::pack
