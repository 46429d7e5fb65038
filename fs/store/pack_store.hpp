// PackStore: where the pack files of partitions are read from.
//
// Today the packs sit in the dataset directory (PosixPackStore); the multi-node
// issue stages them onto node-local disk behind this same interface. The
// returned file stays valid for the life of the store. Implementations are
// thread-safe.
#pragma once

#include <cstdint>

#include "partitioner/format/file_io.hpp"
#include "partitioner/format/status.hpp"

namespace clairfs::fs {

class PackStore {
 public:
  virtual ~PackStore() = default;
  // The pack of partition p (p == partition_count: the broadcast pack).
  // NotFound or Corruption (wrong size or header) name the pack file.
  virtual Result<const format::RandomAccessFile*> Pack(uint32_t partition) = 0;
};

}  // namespace clairfs::fs
