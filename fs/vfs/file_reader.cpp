#include "fs/vfs/file_reader.hpp"

#include <algorithm>
#include <chrono>

#include "base/log.hpp"

namespace clairfs::fs {

FileReader::FileReader(std::shared_ptr<const format::Manifest> manifest, PayloadSource* source,
                       RamCache* cache, Stats* stats)
    : manifest_(std::move(manifest)), source_(source), cache_(cache), stats_(stats) {}

uint64_t FileReader::BlockSize(uint32_t node) const {
  const format::NodeRecord& r = manifest_->node(node);
  if (r.codec == static_cast<uint8_t>(format::Codec::kFramed)) {
    return manifest_->header().frame_size;
  }
  // Raw and zstd payloads carry one checksum for the whole file: a byte of it
  // can only be served after the whole payload was read and verified.
  return std::max<uint64_t>(r.size, 1);
}

Result<BlockRef> FileReader::LoadBlock(uint32_t node, uint32_t index, uint64_t block_size) {
  const uint64_t file_size = manifest_->node(node).size;
  const uint64_t start = uint64_t{index} * block_size;
  const size_t len = static_cast<size_t>(std::min(block_size, file_size - start));
  auto block = std::make_shared<Block>(len);
  const auto t0 = std::chrono::steady_clock::now();
  auto n = source_->Read(node, start, len, block->data.get());
  const auto ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0)
          .count();
  Stats::Add(stats_->decode_ns, static_cast<uint64_t>(ns));
  if (!n.ok()) {
    const Status& st = n.status();
    Stats::Add(st.IsCorruption() ? stats_->corruption_errors : stats_->io_errors, 1);
    Log(LogLevel::kError, st.ToString());
    return st;
  }
  if (*n != len) {
    Stats::Add(stats_->io_errors, 1);
    Status st = Status::IOError(manifest_->Path(node) + ": short read from partition " +
                                std::to_string(manifest_->node(node).partition));
    Log(LogLevel::kError, st.ToString());
    return st;
  }
  Stats::Add(stats_->pack_block_loads, 1);
  if (index == 0) Stats::Add(stats_->pack_files_loaded, 1);
  Stats::Add(stats_->pack_decoded_bytes, len);
  return BlockRef(std::move(block));
}

std::optional<ReadData> FileReader::ReadIfCached(uint32_t node, uint64_t offset, size_t size) {
  return Cached(node, offset, size, /*count=*/true);
}

std::optional<ReadData> FileReader::Peek(uint32_t node) {
  return Cached(node, 0, SIZE_MAX, /*count=*/false);
}

std::optional<ReadData> FileReader::Cached(uint32_t node, uint64_t offset, size_t size,
                                           bool count) {
  ReadData out;
  const uint64_t file_size = manifest_->node(node).size;
  if (offset >= file_size || size == 0) return out;
  const uint64_t end = std::min<uint64_t>(file_size, offset + size);
  const uint64_t bs = BlockSize(node);
  const uint32_t first = static_cast<uint32_t>(offset / bs);
  const uint32_t last = static_cast<uint32_t>((end - 1) / bs);
  std::vector<BlockKey> keys;
  for (uint32_t i = first; i <= last; ++i) keys.push_back(MakeBlockKey(node, i));
  std::vector<BlockRef> blocks;
  if (!cache_->LookupAll(keys, &blocks, count)) return std::nullopt;
  for (uint64_t pos = offset; pos < end;) {
    const uint32_t index = static_cast<uint32_t>(pos / bs);
    const BlockRef& block = blocks[index - first];
    const uint64_t in_block = pos - uint64_t{index} * bs;
    const uint64_t take = std::min<uint64_t>(end - pos, block->size - in_block);
    out.slices.push_back({block, block->data.get() + in_block, static_cast<size_t>(take)});
    out.total += take;
    pos += take;
  }
  out.from_ram_cache = true;
  return out;
}

Result<ReadData> FileReader::Read(uint32_t node, uint64_t offset, size_t size) {
  ReadData out;
  const uint64_t file_size = manifest_->node(node).size;
  if (offset >= file_size || size == 0) return out;
  const uint64_t end = std::min<uint64_t>(file_size, offset + size);
  const uint64_t bs = BlockSize(node);
  bool all_hits = true;
  for (uint64_t pos = offset; pos < end;) {
    const uint32_t index = static_cast<uint32_t>(pos / bs);
    RamCache::Outcome outcome;
    auto block = cache_->GetOrLoad(
        MakeBlockKey(node, index), [&] { return LoadBlock(node, index, bs); }, &outcome);
    if (!block.ok()) return block.status();
    if (outcome != RamCache::Outcome::kHit) all_hits = false;
    if (outcome == RamCache::Outcome::kWaited) Stats::Add(stats_->coalesced_waits, 1);
    const uint64_t block_start = uint64_t{index} * bs;
    const uint64_t in_block = pos - block_start;
    const uint64_t take = std::min<uint64_t>(end - pos, (*block)->size - in_block);
    out.slices.push_back({*block, (*block)->data.get() + in_block, static_cast<size_t>(take)});
    out.total += take;
    pos += take;
  }
  out.from_ram_cache = all_hits;
  return out;
}

}  // namespace clairfs::fs
