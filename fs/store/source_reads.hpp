// What this daemon read from the dataset directory (the shared file system),
// by why, and how much of it it had read before: the first epoch's cost on
// the shared file system is every byte read from it once.
//
// SourceReads counts ranges of packs as they are read: staging's copies, and
// every other read (a fallback for a partition no owner answers, this rank's
// own partition before its staged copy is in, a peer served from it, bytes
// read again after a failed checksum). A byte read a second time is counted
// in `reread`. The file system's client may answer some reads from its page
// cache: these are the bytes asked of it.
//
// Thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "base/mutex.hpp"
#include "fs/store/range_set.hpp"
#include "partitioner/format/file_io.hpp"

namespace clairfs::fs {

enum class SourceRead { kStaging, kDirect };

struct SourceTotals {
  uint64_t staged = 0;    // read by staging's copies
  uint64_t direct = 0;    // read by everything else
  uint64_t distinct = 0;  // different bytes among them
  uint64_t reread = 0;    // read again (staged + direct - distinct)
};

class SourceReads {
 public:
  explicit SourceReads(uint32_t packs);
  // `size` bytes of pack `pack` at `offset` were read from the dataset directory.
  void Add(uint32_t pack, uint64_t offset, uint64_t size, SourceRead why);
  SourceTotals totals() const;

 private:
  mutable Mutex mu_;
  std::vector<RangeSet> read_ CLAIRFS_GUARDED_BY(mu_);  // per pack: the bytes read
  SourceTotals totals_ CLAIRFS_GUARDED_BY(mu_);
};

// A pack of the dataset directory whose reads are counted as direct ones.
class CountedFile final : public format::RandomAccessFile {
 public:
  CountedFile(std::unique_ptr<format::RandomAccessFile> file, uint32_t pack, SourceReads* reads)
      : file_(std::move(file)), pack_(pack), reads_(reads) {}
  Status ReadExact(uint64_t offset, size_t size, void* dst) const override;
  const std::string& name() const override { return file_->name(); }
  void WillNeed(uint64_t offset, size_t size) const override { file_->WillNeed(offset, size); }
  // From the page cache here: no read of the file system, not counted.
  bool ReadIfCached(uint64_t offset, size_t size, void* dst) const override {
    return file_->ReadIfCached(offset, size, dst);
  }

 private:
  const std::unique_ptr<format::RandomAccessFile> file_;
  const uint32_t pack_;
  SourceReads* const reads_;
};

}  // namespace clairfs::fs
