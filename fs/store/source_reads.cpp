#include "fs/store/source_reads.hpp"

#include <algorithm>
#include <iterator>

namespace clairfs::fs {

SourceReads::SourceReads(uint32_t packs) : read_(packs) {}

void SourceReads::Add(uint32_t pack, uint64_t offset, uint64_t size, SourceRead why) {
  if (size == 0) return;
  MutexLock lock(&mu_);
  (why == SourceRead::kStaging ? totals_.staged : totals_.direct) += size;
  if (pack >= read_.size()) {
    totals_.distinct += size;
    return;
  }
  std::map<uint64_t, uint64_t>& ranges = read_[pack];
  const uint64_t lo = offset, hi = offset + size;
  // The ranges that overlap or touch [lo, hi): the last one starting at or
  // before lo if it reaches lo, then those starting up to hi. Merged into one.
  auto it = ranges.upper_bound(lo);
  if (it != ranges.begin() && std::prev(it)->second >= lo) --it;
  uint64_t start = lo, end = hi, seen = 0;
  while (it != ranges.end() && it->first <= hi) {
    const uint64_t a = it->first, b = it->second;
    if (b > lo && a < hi) seen += std::min(b, hi) - std::max(a, lo);
    start = std::min(start, a);
    end = std::max(end, b);
    it = ranges.erase(it);
  }
  ranges.emplace(start, end);
  totals_.reread += seen;
  totals_.distinct += size - seen;
}

SourceTotals SourceReads::totals() const {
  MutexLock lock(&mu_);
  return totals_;
}

Status CountedFile::ReadExact(uint64_t offset, size_t size, void* dst) const {
  Status st = file_->ReadExact(offset, size, dst);
  if (st.ok()) reads_->Add(pack_, offset, size, SourceRead::kDirect);
  return st;
}

}  // namespace clairfs::fs
