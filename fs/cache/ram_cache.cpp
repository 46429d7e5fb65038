#include "fs/cache/ram_cache.hpp"

#include <algorithm>

namespace clairfs::fs {

RamCache::RamCache(uint64_t capacity_bytes, std::unique_ptr<CachePolicy> policy)
    : capacity_(capacity_bytes), policy_(std::move(policy)) {}

bool RamCache::LookupAll(const std::vector<BlockKey>& keys, std::vector<BlockRef>* out,
                         bool count) {
  MutexLock lock(&mu_);
  for (BlockKey key : keys) {
    if (blocks_.count(key) == 0) return false;
  }
  for (BlockKey key : keys) {
    if (count) {
      ++counters_.hits;
      policy_->Touched(key);
    }
    out->push_back(blocks_.at(key));
  }
  return true;
}

Result<BlockRef> RamCache::GetOrLoad(BlockKey key, const Loader& load, Outcome* outcome) {
  std::promise<Result<BlockRef>> promise;
  {
    MutexLock lock(&mu_);
    auto it = blocks_.find(key);
    if (it != blocks_.end()) {
      ++counters_.hits;
      policy_->Touched(key);
      if (outcome != nullptr) *outcome = Outcome::kHit;
      return it->second;
    }
    ++counters_.misses;
    auto pending = loading_.find(key);
    if (pending != loading_.end()) {
      Waiter waiter = pending->second;
      lock.Unlock();
      if (outcome != nullptr) *outcome = Outcome::kWaited;
      return waiter.get();
    }
    loading_.emplace(key, promise.get_future().share());
  }
  if (outcome != nullptr) *outcome = Outcome::kLoaded;
  Result<BlockRef> result = load();
  std::vector<BlockRef> dropped;  // freed after the lock is released
  {
    MutexLock lock(&mu_);
    if (result.ok()) InsertLocked(key, *result, &dropped);
    loading_.erase(key);
  }
  promise.set_value(result);
  return result;
}

void RamCache::InsertLocked(BlockKey key, const BlockRef& block, std::vector<BlockRef>* dropped) {
  const uint64_t size = block->size;
  if (size > capacity_) {
    ++counters_.rejected;
    return;
  }
  if (blocks_.count(key) != 0) return;
  if (owner_ != nullptr) {
    std::vector<uint32_t> drop;
    const bool keep = owner_->Keep(BlockNode(key), &drop);
    for (uint32_t node : drop) EraseFileLocked(node, dropped);
    if (!keep) {
      ++counters_.declined;
      return;
    }
  } else {
    while (bytes_ + size > capacity_) {
      auto victim = policy_->Victim();
      if (!victim) break;  // cannot happen while bytes_ > 0; guards a broken policy
      auto it = blocks_.find(*victim);
      if (it == blocks_.end()) {
        policy_->Erased(*victim);
        continue;
      }
      ++counters_.evictions;
      counters_.evicted_bytes += it->second->size;
      RemoveLocked(it, dropped);
    }
  }
  // With an owner this holds unless its eviction of another file has not
  // reached EraseFile yet (a moment after its decision): the block is then
  // served, not kept, and the whole file let go on both sides.
  if (bytes_ + size > capacity_) {
    ++counters_.rejected;
    if (owner_ != nullptr) {
      EraseFileLocked(BlockNode(key), dropped);
      owner_->Dropped(BlockNode(key));
    }
    return;
  }
  blocks_.emplace(key, block);
  bytes_ += size;
  counters_.peak_bytes = std::max(counters_.peak_bytes, bytes_);
  ++file_blocks_[BlockNode(key)];
  ++counters_.inserts;
  policy_->Inserted(key, size);
}

void RamCache::RemoveLocked(std::unordered_map<BlockKey, BlockRef>::iterator it,
                            std::vector<BlockRef>* dropped) {
  const BlockKey key = it->first;
  policy_->Erased(key);
  bytes_ -= it->second->size;
  dropped->push_back(std::move(it->second));
  blocks_.erase(it);
  auto n = file_blocks_.find(BlockNode(key));
  if (--n->second == 0) file_blocks_.erase(n);
}

void RamCache::EraseFileLocked(uint32_t node, std::vector<BlockRef>* dropped) {
  auto n = file_blocks_.find(node);
  if (n == file_blocks_.end()) return;
  // The file's blocks may be any of its indices: walk them until all are
  // found (a file's cached blocks are few next to the hash lookups saved by
  // not indexing them).
  uint32_t left = n->second;
  for (uint32_t index = 0; left > 0; ++index) {
    auto it = blocks_.find(MakeBlockKey(node, index));
    if (it == blocks_.end()) continue;
    --left;
    RemoveLocked(it, dropped);
  }
}

void RamCache::Clear() {
  std::vector<BlockRef> dropped;  // freed after the lock is released
  MutexLock lock(&mu_);
  for (auto& [key, block] : blocks_) {
    policy_->Erased(key);
    dropped.push_back(std::move(block));
  }
  if (owner_ != nullptr) {
    for (const auto& [node, count] : file_blocks_) owner_->Dropped(node);
  }
  blocks_.clear();
  file_blocks_.clear();
  bytes_ = 0;
}

void RamCache::SetOwner(FileOwner* owner) {
  Clear();
  MutexLock lock(&mu_);
  owner_ = owner;
}

void RamCache::EraseFile(uint32_t node) {
  std::vector<BlockRef> dropped;  // freed after the lock is released
  MutexLock lock(&mu_);
  EraseFileLocked(node, &dropped);
}

void RamCache::EraseFileIf(uint32_t node, const std::function<bool()>& decide) {
  std::vector<BlockRef> dropped;  // freed after the lock is released
  MutexLock lock(&mu_);
  if (decide()) EraseFileLocked(node, &dropped);
}

CacheStats RamCache::Snapshot() const {
  MutexLock lock(&mu_);
  CacheStats s = counters_;
  s.capacity_bytes = capacity_;
  s.bytes = bytes_;
  s.entries = blocks_.size();
  s.owned = owner_ != nullptr;
  return s;
}

}  // namespace clairfs::fs
