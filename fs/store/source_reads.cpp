#include "fs/store/source_reads.hpp"

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
  const uint64_t seen = read_[pack].Add(offset, offset + size);
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
