// RamCache: decoded blocks kept in RAM under a byte budget.
//
// GetOrLoad() returns a cached block or loads it; concurrent misses on the
// same key share one load (single flight), so a file is decoded once however
// many readers ask at the same moment. The bytes held never exceed the
// capacity: a block larger than the whole budget is returned to its callers
// but not kept. Eviction order comes from a CachePolicy.
//
// Thread-safe. One mutex (mu_) guards the maps, the byte count and the policy;
// it is never held during a load, a copy or a free of block bytes, so the
// critical sections are a hash lookup and a list splice. Lock order: mu_ is a
// leaf; the loader runs with no cache lock held.
#pragma once

#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "fs/base/status.hpp"
#include "fs/cache/block.hpp"
#include "fs/cache/cache_policy.hpp"
#include "fs/core/stats.hpp"

namespace clairfs::fs {

class RamCache {
 public:
  using Loader = std::function<Result<BlockRef>()>;
  enum class Outcome { kHit, kLoaded, kWaited };  // how GetOrLoad found the block

  RamCache(uint64_t capacity_bytes, std::unique_ptr<CachePolicy> policy);

  // The block for `key`: from RAM, else from `load` (called by one of the
  // concurrent callers; the others wait for it and share its result, error
  // included). A failed load is not cached.
  Result<BlockRef> GetOrLoad(BlockKey key, const Loader& load, Outcome* outcome = nullptr);
  // The cached block or null; counts as a hit.
  BlockRef Lookup(BlockKey key);
  // Every block of `keys`, in order, if all are cached (each counts as a hit);
  // otherwise false, `out` untouched and nothing counted. One lock for all.
  bool LookupAll(const std::vector<BlockKey>& keys, std::vector<BlockRef>* out);
  // Drops the block for `key` if cached (the prefetcher's evictions); readers
  // holding it keep it alive. Not counted as an eviction.
  void Erase(BlockKey key);
  // Drops every block (a test hook, and for a future memory-pressure signal).
  void Clear();
  CacheStats Snapshot() const;

 private:
  using Waiter = std::shared_future<Result<BlockRef>>;
  // Inserts under mu_, evicting until it fits; the evicted blocks are moved to
  // `dropped` so they are freed after the lock is released.
  void InsertLocked(BlockKey key, const BlockRef& block, std::vector<BlockRef>* dropped);

  const uint64_t capacity_;
  mutable std::mutex mu_;
  std::unique_ptr<CachePolicy> policy_;
  std::unordered_map<BlockKey, BlockRef> blocks_;
  std::unordered_map<BlockKey, Waiter> loading_;
  uint64_t bytes_ = 0;
  CacheStats counters_;  // bytes/entries/capacity filled in by Snapshot()
};

}  // namespace clairfs::fs
