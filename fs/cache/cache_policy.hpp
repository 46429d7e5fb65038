// CachePolicy: which cached block RamCache evicts next.
//
// RamCache owns the bytes and the budget; the policy only orders keys, block
// by block, when no FileOwner decides (with a sampler the prefetch planner
// does, by whole files: ram_cache.hpp). Single-thread: RamCache calls it
// under its own lock, so an implementation must be quick and must not call
// back into the cache.
#pragma once

#include <cstdint>
#include <list>
#include <optional>
#include <unordered_map>

#include "fs/cache/block.hpp"

namespace clairfs::fs {

class CachePolicy {
 public:
  virtual ~CachePolicy() = default;
  virtual void Inserted(BlockKey key, uint64_t bytes) = 0;
  virtual void Touched(BlockKey key) = 0;  // a hit
  virtual void Erased(BlockKey key) = 0;   // evicted or dropped
  // The block to evict next, among those inserted and not erased; nullopt when
  // none. Not removed until Erased() is called for it.
  virtual std::optional<BlockKey> Victim() = 0;
};

// Least recently used. O(1) per call.
class LruPolicy final : public CachePolicy {
 public:
  void Inserted(BlockKey key, uint64_t bytes) override;
  void Touched(BlockKey key) override;
  void Erased(BlockKey key) override;
  std::optional<BlockKey> Victim() override;

 private:
  std::list<BlockKey> order_;  // front: most recently used
  std::unordered_map<BlockKey, std::list<BlockKey>::iterator> where_;
};

}  // namespace clairfs::fs
