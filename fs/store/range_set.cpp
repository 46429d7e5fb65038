#include "fs/store/range_set.hpp"

#include <algorithm>
#include <iterator>

namespace clairfs::fs {

uint64_t RangeSet::Add(uint64_t lo, uint64_t hi) {
  if (hi <= lo) return 0;
  // The ranges that overlap or touch [lo, hi): the last one starting at or
  // before lo if it reaches lo, then those starting up to hi. Merged into one.
  auto it = ranges_.upper_bound(lo);
  if (it != ranges_.begin() && std::prev(it)->second >= lo) --it;
  uint64_t start = lo, end = hi, seen = 0;
  while (it != ranges_.end() && it->first <= hi) {
    const uint64_t a = it->first, b = it->second;
    if (b > lo && a < hi) seen += std::min(b, hi) - std::max(a, lo);
    start = std::min(start, a);
    end = std::max(end, b);
    it = ranges_.erase(it);
  }
  ranges_.emplace(start, end);
  bytes_ += (hi - lo) - seen;
  return seen;
}

void RangeSet::Remove(uint64_t lo, uint64_t hi) {
  if (hi <= lo) return;
  auto it = ranges_.upper_bound(lo);
  if (it != ranges_.begin() && std::prev(it)->second > lo) --it;
  while (it != ranges_.end() && it->first < hi) {
    const uint64_t a = it->first, b = it->second;
    it = ranges_.erase(it);
    bytes_ -= b - a;
    if (a < lo) {
      ranges_.emplace(a, lo);
      bytes_ += lo - a;
    }
    if (b > hi) {
      ranges_.emplace(hi, b);
      bytes_ += b - hi;
    }
  }
}

bool RangeSet::Covers(uint64_t lo, uint64_t hi) const {
  if (hi <= lo) return true;
  auto it = ranges_.upper_bound(lo);
  if (it == ranges_.begin()) return false;
  --it;
  return it->first <= lo && it->second >= hi;
}

std::vector<std::pair<uint64_t, uint64_t>> RangeSet::Gaps(uint64_t lo, uint64_t hi) const {
  std::vector<std::pair<uint64_t, uint64_t>> gaps;
  auto it = ranges_.upper_bound(lo);
  if (it != ranges_.begin() && std::prev(it)->second > lo) --it;
  uint64_t at = lo;
  for (; it != ranges_.end() && it->first < hi && at < hi; ++it) {
    if (it->first > at) gaps.emplace_back(at, it->first);
    at = std::max(at, it->second);
  }
  if (at < hi) gaps.emplace_back(at, hi);
  return gaps;
}

}  // namespace clairfs::fs
