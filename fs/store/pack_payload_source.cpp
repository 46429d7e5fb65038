#include <algorithm>

#include "fs/store/payload_source.hpp"

namespace clairfs::fs {

std::shared_ptr<const format::FrameTable> PackPayloadSource::Table(uint32_t node) {
  MutexLock lock(&mu_);
  auto it = tables_.find(node);
  return it == tables_.end() ? nullptr : it->second;
}

void PackPayloadSource::Keep(uint32_t node, std::shared_ptr<const format::FrameTable> table) {
  const size_t bytes = table->MemoryBytes();
  if (bytes > table_cache_bytes_) return;
  MutexLock lock(&mu_);
  if (!tables_.emplace(node, std::move(table)).second) return;  // another thread was first
  table_order_.push_back(node);
  table_bytes_ += bytes;
  while (table_bytes_ > table_cache_bytes_) {
    auto oldest = tables_.find(table_order_.front());
    table_bytes_ -= oldest->second->MemoryBytes();
    tables_.erase(oldest);
    table_order_.pop_front();
  }
}

Result<size_t> PackPayloadSource::Read(uint32_t node, uint64_t offset, size_t length, char* dst) {
  // A decoder owns a zstd context and is single-thread: one per worker thread.
  thread_local format::PayloadDecoder decoder;
  const format::NodeRecord& r = manifest_->node(node);
  auto pack = store_->Pack(r.partition);
  const auto what = [&] {
    return manifest_->Path(node) + " (partition " + std::to_string(r.partition) + ", " +
           manifest_->PackName(r.partition) + ")";
  };
  // A file whose bytes cannot be had is EIO, whatever the cause (a missing
  // pack is not a missing file: the name exists), with the cause in the message.
  const auto fail = [&](const Status& st) {
    if (st.IsCorruption()) return st;
    const std::string msg =
        st.message().rfind(what(), 0) == 0 ? st.message() : what() + ": " + st.message();
    return Status::IOError(msg, EIO);
  };
  if (!pack.ok()) return fail(pack.status());
  const bool framed = r.codec == static_cast<uint8_t>(format::Codec::kFramed);
  std::shared_ptr<const format::FrameTable> table = framed ? Table(node) : nullptr;
  const bool known = table != nullptr;
  const auto loc = format::PayloadLocation::Of(r);
  auto n = decoder.Read(**pack, loc, offset, length, dst, what(), &table);
  if (!n.ok() && n.status().IsCorruption()) {
    // A damaged copy (a staged pack, a peer's answer) is not a damaged file
    // while the dataset directory's pack is intact: read it once more there.
    // A table that passed its checksum is good whichever copy it came from.
    auto again = store_->Reread(r.partition, *pack);
    if (again.ok() && *again != nullptr) {
      n = decoder.Read(**again, loc, offset, length, dst, what(), &table);
    }
  }
  if (!n.ok()) {
    if (!known && table != nullptr) Keep(node, std::move(table));
    return fail(n.status());
  }
  if (table != nullptr && *n > 0) ReadAhead(node, **pack, loc, *table, offset, *n);
  if (!known && table != nullptr) Keep(node, std::move(table));
  return n;
}

void PackPayloadSource::ReadAhead(uint32_t node, const format::RandomAccessFile& pack,
                                  const format::PayloadLocation& loc,
                                  const format::FrameTable& table, uint64_t offset, size_t n) {
  if (frames_ahead_ == 0) return;
  const uint64_t first = offset / table.frame_size;
  const uint64_t next = (offset + n - 1) / table.frame_size + 1;
  uint64_t from_frame = 0, end = 0;
  {
    MutexLock lock(&mu_);
    auto it = next_frame_.find(node);
    // In order: the read begins where the file's reads have got to, or a few
    // frames before (READs of one reader answered out of order by the pool's
    // threads), or among the frames hinted already.
    const bool in_order = it != next_frame_.end() && first + frames_ahead_ >= it->second.next &&
                          first <= std::max(it->second.next, it->second.hinted_end);
    if (it == next_frame_.end() && next_frame_.size() >= kReadersTracked) next_frame_.clear();
    Reader& reader = next_frame_[node];
    if (!in_order) {
      reader.next = reader.hinted_end = next;
      return;
    }
    reader.next = std::max(reader.next, next);
    end = std::min<uint64_t>(table.entries.size(), reader.next + frames_ahead_);
    // Frames hinted by the reader's earlier reads are not hinted again.
    from_frame = std::max(reader.next, reader.hinted_end);
    reader.hinted_end = std::max(end, reader.hinted_end);
  }
  if (from_frame >= end) return;
  // The pack's bytes of the frames that follow, one frame at a time: a staged
  // copy or the dataset directory's pack has the kernel read them in the
  // background, a peer's pack asks its owner for them now; the next READs find
  // them waiting.
  for (uint64_t i = from_frame; i < end; ++i) {
    pack.FetchAhead(loc.offset + table.starts[i], table.entries[i].stored_size);
  }
  const uint64_t to =
      end == table.entries.size() ? loc.offset + loc.stored_size : loc.offset + table.starts[end];
  ahead_hints_.fetch_add(1, std::memory_order_relaxed);
  ahead_bytes_.fetch_add(to - (loc.offset + table.starts[from_frame]), std::memory_order_relaxed);
}

}  // namespace clairfs::fs
