#include "fs/cache/cache_policy.hpp"

namespace clairfs::fs {

void LruPolicy::Inserted(BlockKey key, uint64_t) {
  auto it = where_.find(key);
  if (it != where_.end()) {
    order_.splice(order_.begin(), order_, it->second);
    return;
  }
  order_.push_front(key);
  where_.emplace(key, order_.begin());
}

void LruPolicy::Touched(BlockKey key) {
  auto it = where_.find(key);
  if (it != where_.end()) order_.splice(order_.begin(), order_, it->second);
}

void LruPolicy::Erased(BlockKey key) {
  auto it = where_.find(key);
  if (it == where_.end()) return;
  order_.erase(it->second);
  where_.erase(it);
}

std::optional<BlockKey> LruPolicy::Victim() {
  if (order_.empty()) return std::nullopt;
  return order_.back();
}

}  // namespace clairfs::fs
