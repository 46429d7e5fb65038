// RamCache: decoded blocks kept in RAM under a byte budget - the daemon's one
// store of file bytes in RAM.
//
// GetOrLoad() returns a cached block or loads it; concurrent misses on the
// same key share one load (single flight), so a file is decoded once however
// many readers ask at the same moment. The bytes held never exceed the
// capacity: a block larger than the whole budget is returned to its callers
// but not kept.
//
// Who decides what stays: without an owner, the cache evicts block by block
// in the order of its CachePolicy (LRU). With a FileOwner (the prefetch
// planner, which knows the future), the owner decides by whole files: a
// loaded block is kept only if the owner counts its file, the owner names
// the files to drop to make room, and the owner's own evictions come back
// through EraseFile. The cache then never evicts on its own, so every byte
// it holds belongs to a file the owner counts, and the owner's budget is the
// cache's capacity. A kept block that does not fit (the owner's eviction of
// another file has not reached the cache yet) is served, and its file let go
// on both sides: the owner never counts a file without its bytes.
//
// Thread-safe. One mutex (mu_) guards the maps, the byte count, the policy
// and the calls to the owner; it is never held during a load, a copy or a
// free of block bytes, so the critical sections are a hash lookup and a list
// splice (or one owner decision). Lock order: mu_, then the owner's locks;
// the loader runs with no cache lock held.
#pragma once

#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "base/mutex.hpp"
#include "base/status.hpp"
#include "fs/cache/block.hpp"
#include "fs/cache/cache_policy.hpp"
#include "fs/stats/stats.hpp"

namespace clairfs::fs {

// Decides, by whole files, which blocks the cache keeps (see above). Called
// under the cache's lock: an owner must be quick and must not call back into
// the cache.
class FileOwner {
 public:
  virtual ~FileOwner() = default;
  // A loaded block of file `node` is about to be kept. True: keep it (the
  // file's bytes are counted by the owner); `drop` receives files whose
  // blocks must go first. False: serve it, do not keep it.
  virtual bool Keep(uint32_t node, std::vector<uint32_t>* drop) = 0;
  // The cache dropped the blocks of `node` on its own (Clear, or a kept
  // block that did not fit): no longer held.
  virtual void Dropped(uint32_t node) = 0;
};

class RamCache {
 public:
  using Loader = std::function<Result<BlockRef>()>;
  enum class Outcome { kHit, kLoaded, kWaited };  // how GetOrLoad found the block

  RamCache(uint64_t capacity_bytes, std::unique_ptr<CachePolicy> policy);

  // The block for `key`: from RAM, else from `load` (called by one of the
  // concurrent callers; the others wait for it and share its result, error
  // included). A failed load is not cached.
  Result<BlockRef> GetOrLoad(BlockKey key, const Loader& load, Outcome* outcome = nullptr);
  // Every block of `keys`, in order, if all are cached (each counts as a hit
  // when `count`); otherwise false, `out` untouched and nothing counted. One
  // lock for all.
  bool LookupAll(const std::vector<BlockKey>& keys, std::vector<BlockRef>* out, bool count = true);
  // Drops every cached block of file `node` (the owner's evictions); readers
  // holding them keep them alive. Not counted as evictions.
  void EraseFile(uint32_t node);
  // The same if `decide`, run under the cache's lock, returns true: the
  // owner's change (or its check that the file is still let go) and the
  // erase are one moment for the cache, with no Keep of the file between.
  void EraseFileIf(uint32_t node, const std::function<bool()>& decide);
  // Drops every block (a test hook, and for a future memory-pressure signal);
  // the owner is told of each file.
  void Clear();
  // Hands the decisions to `owner` (null: back to the CachePolicy). Drops
  // every block first, so that nothing is held the owner does not count.
  // The owner must stay valid until it is replaced.
  void SetOwner(FileOwner* owner);
  CacheStats Snapshot() const;

 private:
  using Waiter = std::shared_future<Result<BlockRef>>;
  // Inserts under mu_, evicting until it fits; the evicted blocks are moved to
  // `dropped` so they are freed after the lock is released.
  void InsertLocked(BlockKey key, const BlockRef& block, std::vector<BlockRef>* dropped)
      CLAIRFS_REQUIRES(mu_);
  // Removes the block at `it` (the caller counts it) into `dropped`.
  void RemoveLocked(std::unordered_map<BlockKey, BlockRef>::iterator it,
                    std::vector<BlockRef>* dropped) CLAIRFS_REQUIRES(mu_);
  void EraseFileLocked(uint32_t node, std::vector<BlockRef>* dropped) CLAIRFS_REQUIRES(mu_);

  const uint64_t capacity_;
  mutable Mutex mu_;
  std::unique_ptr<CachePolicy> policy_ CLAIRFS_GUARDED_BY(mu_);
  std::unordered_map<BlockKey, BlockRef> blocks_ CLAIRFS_GUARDED_BY(mu_);
  std::unordered_map<BlockKey, Waiter> loading_ CLAIRFS_GUARDED_BY(mu_);
  // By node: blocks cached.
  std::unordered_map<uint32_t, uint32_t> file_blocks_ CLAIRFS_GUARDED_BY(mu_);
  FileOwner* owner_ CLAIRFS_GUARDED_BY(mu_) = nullptr;
  uint64_t bytes_ CLAIRFS_GUARDED_BY(mu_) = 0;
  // bytes/entries/capacity filled in by Snapshot()
  CacheStats counters_ CLAIRFS_GUARDED_BY(mu_);
};

}  // namespace clairfs::fs
