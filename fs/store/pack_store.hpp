// PackStore: where the pack files of partitions are read from.
//
// Implementations: PosixPackStore (the packs of one directory),
// DistributedPackStore (fs/dist: this rank's staged copies, peers' packs over
// the transport, the dataset directory as the fallback) and MemoryPackStore
// (tests). The returned file stays valid for the life of the store.
// Implementations are thread-safe.
#pragma once

#include <cstdint>

#include "base/status.hpp"
#include "partitioner/format/file_io.hpp"

namespace clairfs::fs {

class PackStore {
 public:
  virtual ~PackStore() = default;
  // The pack of partition p (p == partition_count: the broadcast pack).
  // NotFound or Corruption (wrong size or header) name the pack file.
  virtual Result<const format::RandomAccessFile*> Pack(uint32_t partition) = 0;
  // Another copy of partition p's pack to read again after bytes read from
  // `damaged` (what Pack(p) returned) failed their checksum: the dataset
  // directory's pack where `damaged` is a staged copy or a peer (bit rot on a
  // node's disk must not cost a file the shared file system holds intact).
  // nullptr when `damaged` already is that pack. Called only on that rare path.
  virtual Result<const format::RandomAccessFile*> Reread(uint32_t partition,
                                                         const format::RandomAccessFile* damaged) {
    (void)partition;
    (void)damaged;
    return nullptr;
  }
};

}  // namespace clairfs::fs
