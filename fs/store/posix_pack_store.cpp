#include "fs/store/posix_pack_store.hpp"

#include "partitioner/format/pack_file.hpp"

namespace clairfs::fs {

PosixPackStore::PosixPackStore(std::string dir, std::shared_ptr<const format::Manifest> manifest,
                               PackReadahead* readahead, SourceReads* source)
    : dir_(std::move(dir)), manifest_(std::move(manifest)), readahead_(readahead), source_(source) {
  const uint32_t n = manifest_->partition_count() + 1;
  owned_.resize(n);
  files_.reset(new std::atomic<const format::RandomAccessFile*>[n]);
  for (uint32_t i = 0; i < n; ++i) files_[i].store(nullptr);
}

Result<const format::RandomAccessFile*> PosixPackStore::Pack(uint32_t partition) {
  if (partition > manifest_->partition_count()) {
    return Status::InvalidArgument("partition " + std::to_string(partition) + " out of range");
  }
  const format::RandomAccessFile* f = files_[partition].load(std::memory_order_acquire);
  if (f != nullptr) return f;
  MutexLock lock(&open_mu_);
  f = files_[partition].load(std::memory_order_acquire);
  if (f != nullptr) return f;
  auto opened = format::OpenPack(dir_, *manifest_, partition);
  if (!opened.ok()) return opened.status();
  if (source_ != nullptr) {
    owned_[partition] =
        std::make_unique<CountedFile>(std::move(opened).value(), partition, source_);
  } else {
    owned_[partition] = std::move(opened).value();
  }
  f = owned_[partition].get();
  files_[partition].store(f, std::memory_order_release);
  if (readahead_ != nullptr) {
    readahead_->Request(f->name(), manifest_->partition(partition).pack_bytes);
  }
  return f;
}

}  // namespace clairfs::fs
