// PackStore over OUT/part-* files, opened on first use with format::OpenPack
// (which checks size and header against the manifest) and kept open.
//
// Thread-safe: the fast path is one acquire load; the first open of a pack
// happens under a mutex, once. A failed open is not remembered, so a pack that
// appears later (staging) is picked up by the next read.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/mutex.hpp"
#include "fs/store/pack_readahead.hpp"
#include "fs/store/pack_store.hpp"
#include "fs/store/source_reads.hpp"
#include "partitioner/format/manifest.hpp"

namespace clairfs::fs {

class PosixPackStore final : public PackStore {
 public:
  // `readahead` (may be null, not owned) is asked to read each pack ahead on
  // its first successful open; `source` (may be null, not owned) counts the
  // packs' reads as direct reads of the dataset directory.
  PosixPackStore(std::string dir, std::shared_ptr<const format::Manifest> manifest,
                 PackReadahead* readahead = nullptr, SourceReads* source = nullptr);
  Result<const format::RandomAccessFile*> Pack(uint32_t partition) override;
  // The pack of `partition` if it is open already, else null (never opens:
  // no wait for the file system).
  const format::RandomAccessFile* IfOpen(uint32_t partition) const {
    return partition <= manifest_->partition_count()
               ? files_[partition].load(std::memory_order_acquire)
               : nullptr;
  }

 private:
  const std::string dir_;
  const std::shared_ptr<const format::Manifest> manifest_;
  PackReadahead* const readahead_;
  SourceReads* const source_;
  Mutex open_mu_;  // also taken for the first store into files_
  std::vector<std::unique_ptr<format::RandomAccessFile>> owned_ CLAIRFS_GUARDED_BY(open_mu_);
  std::unique_ptr<std::atomic<const format::RandomAccessFile*>[]> files_;
};

}  // namespace clairfs::fs
