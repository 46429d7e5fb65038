// Blocks: the unit of the RAM cache. A block is a whole file (raw and zstd
// payloads) or one frame of a framed file, decoded and verified.
// Immutable once published; shared by reference between the cache and the
// replies in flight, so an evicted block lives until its last reader is done.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace clairfs::fs {

struct Block {
  explicit Block(size_t n) : data(new char[n]), size(n) {}  // uninitialised: the loader fills it
  std::unique_ptr<char[]> data;
  size_t size;
};
using BlockRef = std::shared_ptr<const Block>;

// (file node, block index) packed into one word.
using BlockKey = uint64_t;
inline BlockKey MakeBlockKey(uint32_t node, uint32_t index) {
  return (uint64_t{node} << 32) | index;
}
inline uint32_t BlockNode(BlockKey key) { return static_cast<uint32_t>(key >> 32); }

}  // namespace clairfs::fs
