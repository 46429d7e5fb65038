// PackStore over packs held in memory: the fake for unit tests and benchmarks
// that need no disk. Packs are added before use; thread-safe for Pack() once
// populated. mutable_pack() lets a test damage bytes between reads.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "fs/store/pack_store.hpp"

namespace clairfs::fs {

class MemoryPackStore final : public PackStore {
 public:
  // packs[p] is the whole pack file of partition p (the last is broadcast).
  explicit MemoryPackStore(const std::vector<std::vector<char>>& packs) {
    for (size_t p = 0; p < packs.size(); ++p) {
      files_.push_back(
          std::make_unique<format::MemoryFile>("mem-part-" + std::to_string(p), packs[p]));
    }
  }
  Result<const format::RandomAccessFile*> Pack(uint32_t partition) override {
    if (partition >= files_.size()) {
      return Status::NotFound("mem-part-" + std::to_string(partition) + ": no such pack");
    }
    return static_cast<const format::RandomAccessFile*>(files_[partition].get());
  }
  std::vector<char>& mutable_pack(uint32_t partition) { return files_.at(partition)->bytes(); }

 private:
  std::vector<std::unique_ptr<format::MemoryFile>> files_;
};

}  // namespace clairfs::fs
