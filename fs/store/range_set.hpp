// RangeSet: a set of byte positions kept as disjoint, merged ranges
// [start, end): which parts of a pack were read, or written. Value type;
// thread-compatible.
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

namespace clairfs::fs {

class RangeSet {
 public:
  // Adds [lo, hi); returns how many of those bytes were in the set already.
  uint64_t Add(uint64_t lo, uint64_t hi);
  // Takes [lo, hi) out of the set.
  void Remove(uint64_t lo, uint64_t hi);
  // Whether every byte of [lo, hi) is in the set (an empty range is).
  bool Covers(uint64_t lo, uint64_t hi) const;
  // The parts of [lo, hi) not in the set, in order.
  std::vector<std::pair<uint64_t, uint64_t>> Gaps(uint64_t lo, uint64_t hi) const;
  uint64_t bytes() const { return bytes_; }
  void Clear() {
    ranges_.clear();
    bytes_ = 0;
  }

 private:
  std::map<uint64_t, uint64_t> ranges_;  // start -> end
  uint64_t bytes_ = 0;
};

}  // namespace clairfs::fs
