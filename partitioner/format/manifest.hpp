// The manifest: the whole namespace of a packed dataset, loaded into one
// buffer and read in place (64 bytes per node plus its name).
//
// Manifest is immutable once parsed and thread-safe. Parse() checks both
// checksums and every structural invariant (ranges, parents, sort order), so a
// Manifest that exists can be walked without bounds checks.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.hpp"
#include "partitioner/format/layout.hpp"

namespace clairfs::format {

class Manifest {
 public:
  // Loads OUT/manifest; `path` may name the manifest file or its directory.
  static Result<std::shared_ptr<const Manifest>> Load(const std::string& path);
  // Reads the manifest's bytes without parsing them (for a broadcast); sets
  // *file to the manifest's path. A missing manifest is NotFound saying so.
  static Status ReadFile(const std::string& path, std::vector<char>* bytes, std::string* file);
  // Parses serialized bytes; `source` names them in error messages.
  static Result<std::shared_ptr<const Manifest>> Parse(std::vector<char> bytes,
                                                       const std::string& source);

  const ManifestHeader& header() const { return *header_; }
  uint32_t node_count() const { return header_->node_count; }
  uint32_t partition_count() const { return header_->partition_count; }
  const NodeRecord& node(uint32_t i) const { return nodes_[i]; }
  std::string_view name(uint32_t i) const {
    return {strings_ + nodes_[i].name_offset, nodes_[i].name_length};
  }
  bool IsDirectory(uint32_t i) const {
    return nodes_[i].kind == static_cast<uint8_t>(NodeKind::kDirectory);
  }
  // p in [0, partition_count]; partition_count is the broadcast pack.
  const PartitionRecord& partition(uint32_t p) const { return partitions_[p]; }
  // Children of a directory: node indices [first, first + count).
  uint32_t FirstChild(uint32_t dir) const { return static_cast<uint32_t>(nodes_[dir].offset); }
  uint32_t ChildCount(uint32_t dir) const { return static_cast<uint32_t>(nodes_[dir].stored_size); }
  // The child of `dir` called `name`, if any (binary search).
  std::optional<uint32_t> Lookup(uint32_t dir, std::string_view name) const;
  // Resolves a relative path ("a/b/c.jpg"; "" is the root).
  Result<uint32_t> Resolve(std::string_view path) const;
  // The relative path of node i ("" for the root).
  std::string Path(uint32_t i) const;
  // "part-00003", or "part-bcast" for the broadcast partition.
  std::string PackName(uint32_t partition) const;
  // Bytes the manifest occupies in RAM.
  size_t memory_bytes() const { return size_; }

 private:
  Manifest() = default;
  std::unique_ptr<uint64_t[]> storage_;  // 8-byte aligned copy of the file
  size_t size_ = 0;
  const ManifestHeader* header_ = nullptr;
  const PartitionRecord* partitions_ = nullptr;
  const NodeRecord* nodes_ = nullptr;
  const char* strings_ = nullptr;
};

// Pack file name for partition p of P ("part-00003", or "part-bcast" for p == P).
std::string PackFileName(uint32_t p, uint32_t partition_count);

// Collects nodes in breadth-first order and serializes a manifest.
// Single-thread.
class ManifestBuilder {
 public:
  // Adds a node and returns its index. The caller adds nodes in breadth-first
  // order, each directory's children contiguous and sorted by name, and sets
  // each directory's offset (first child) and stored_size (child count).
  uint32_t AddNode(const NodeRecord& record, std::string_view name);
  NodeRecord& node(uint32_t i) { return nodes_[i]; }
  uint32_t node_count() const { return static_cast<uint32_t>(nodes_.size()); }
  // Header fields other than counts and checksums; partitions has P + 1 rows.
  ManifestHeader& header() { return header_; }
  std::vector<PartitionRecord>& partitions() { return partitions_; }
  // Fills counts and checksums and returns the bytes; they are parsed back
  // before being returned, so a builder bug cannot produce an invalid manifest.
  Result<std::vector<char>> Serialize();

 private:
  ManifestHeader header_{};
  std::vector<PartitionRecord> partitions_;
  std::vector<NodeRecord> nodes_;
  std::string strings_;
};

}  // namespace clairfs::format
