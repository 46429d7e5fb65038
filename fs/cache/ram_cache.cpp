#include "fs/cache/ram_cache.hpp"

namespace clairfs::fs {

RamCache::RamCache(uint64_t capacity_bytes, std::unique_ptr<CachePolicy> policy)
    : capacity_(capacity_bytes), policy_(std::move(policy)) {}

BlockRef RamCache::Lookup(BlockKey key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = blocks_.find(key);
  if (it == blocks_.end()) return nullptr;
  ++counters_.hits;
  policy_->Touched(key);
  return it->second;
}

bool RamCache::LookupAll(const std::vector<BlockKey>& keys, std::vector<BlockRef>* out) {
  std::lock_guard<std::mutex> lock(mu_);
  for (BlockKey key : keys) {
    if (blocks_.count(key) == 0) return false;
  }
  for (BlockKey key : keys) {
    ++counters_.hits;
    policy_->Touched(key);
    out->push_back(blocks_.at(key));
  }
  return true;
}

Result<BlockRef> RamCache::GetOrLoad(BlockKey key, const Loader& load, Outcome* outcome) {
  std::promise<Result<BlockRef>> promise;
  {
    std::unique_lock<std::mutex> lock(mu_);
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
      lock.unlock();
      if (outcome != nullptr) *outcome = Outcome::kWaited;
      return waiter.get();
    }
    loading_.emplace(key, promise.get_future().share());
  }
  if (outcome != nullptr) *outcome = Outcome::kLoaded;
  Result<BlockRef> result = load();
  std::vector<BlockRef> dropped;  // freed after the lock is released
  {
    std::lock_guard<std::mutex> lock(mu_);
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
  while (bytes_ + size > capacity_) {
    auto victim = policy_->Victim();
    if (!victim) break;  // cannot happen while bytes_ > 0; guards a broken policy
    auto it = blocks_.find(*victim);
    policy_->Erased(*victim);
    if (it == blocks_.end()) continue;
    bytes_ -= it->second->size;
    ++counters_.evictions;
    counters_.evicted_bytes += it->second->size;
    dropped->push_back(std::move(it->second));
    blocks_.erase(it);
  }
  if (bytes_ + size > capacity_) {
    ++counters_.rejected;
    return;
  }
  blocks_.emplace(key, block);
  bytes_ += size;
  ++counters_.inserts;
  policy_->Inserted(key, size);
}

void RamCache::Clear() {
  std::vector<BlockRef> dropped;
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [key, block] : blocks_) {
    policy_->Erased(key);
    dropped.push_back(std::move(block));
  }
  blocks_.clear();
  bytes_ = 0;
}

void RamCache::Erase(BlockKey key) {
  BlockRef dropped;  // freed after the lock is released
  std::lock_guard<std::mutex> lock(mu_);
  auto it = blocks_.find(key);
  if (it == blocks_.end()) return;
  policy_->Erased(key);
  bytes_ -= it->second->size;
  dropped = std::move(it->second);
  blocks_.erase(it);
}

CacheStats RamCache::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  CacheStats s = counters_;
  s.capacity_bytes = capacity_;
  s.bytes = bytes_;
  s.entries = blocks_.size();
  return s;
}

}  // namespace clairfs::fs
