// FileReader: any byte range of a dataset file, through the RAM cache.
//
// A file is cut into blocks: framed files into their frames (frame_size of the
// manifest), every other file is one block. A read copies nothing: it returns
// references to the cached blocks it touches, which stay alive until the reply
// has been sent. A miss loads the block through the PayloadSource (verified
// bytes only); a failure is logged once per failed load, counted, and returned
// with its errno (EIO for corruption). It counts loads, waits and failures
// (Stats), not requests: its caller knows whether a read is a READ request
// (the Vfs counts it, by ReadData::from_ram_cache) or a prefetch fetch.
//
// Thread-safe (the cache and the source are; the rest is immutable).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "fs/cache/ram_cache.hpp"
#include "fs/stats/stats.hpp"
#include "fs/store/payload_source.hpp"
#include "partitioner/format/manifest.hpp"

namespace clairfs::fs {

// A piece of a reply: `size` bytes at `data`, kept alive by `block`.
struct ReadSlice {
  BlockRef block;
  const char* data;
  size_t size;
};

struct ReadData {
  std::vector<ReadSlice> slices;
  size_t total = 0;
  bool from_ram_cache = false;  // every block was in the RAM cache (no load, no wait)
};

class FileReader {
 public:
  FileReader(std::shared_ptr<const format::Manifest> manifest, PayloadSource* source,
             RamCache* cache, Stats* stats);

  // Bytes [offset, offset + size) of file node `node`, clipped to the file.
  Result<ReadData> Read(uint32_t node, uint64_t offset, size_t size);
  // The same bytes if every block they touch is in the RAM cache; otherwise
  // nothing (nothing loaded). Never waits for a load.
  std::optional<ReadData> ReadIfCached(uint32_t node, uint64_t offset, size_t size);
  // The whole file if all of it is in the RAM cache, without counting cache
  // lookups: for the prefetcher's page-cache pushes.
  std::optional<ReadData> Peek(uint32_t node);

 private:
  uint64_t BlockSize(uint32_t node) const;
  std::optional<ReadData> Cached(uint32_t node, uint64_t offset, size_t size, bool count);
  Result<BlockRef> LoadBlock(uint32_t node, uint32_t index, uint64_t block_size);

  const std::shared_ptr<const format::Manifest> manifest_;
  PayloadSource* const source_;  // not owned
  RamCache* const cache_;        // not owned
  Stats* const stats_;           // not owned
};

}  // namespace clairfs::fs
