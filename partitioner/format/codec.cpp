#include "partitioner/format/codec.hpp"

#include <algorithm>
#include <cstring>

#include "partitioner/format/checksum.hpp"

namespace clairfs::format {

// Frames after the last one a read touched that are hinted to the pack's file
// system (WillNeed), so a sequential reader finds them in the page cache.
constexpr uint64_t kReadAheadFrames = 2;

PayloadEncoder::PayloadEncoder(EncodeOptions options)
    : options_(options), cctx_(ZSTD_createCCtx()) {}

PayloadEncoder::~PayloadEncoder() { ZSTD_freeCCtx(cctx_); }

bool PayloadEncoder::TryCompress(const char* data, size_t size, std::vector<char>* dst) {
  if (options_.zstd_level == 0 || size == 0) return false;
  // Output larger than this is not worth keeping, so zstd may stop early.
  size_t limit = static_cast<size_t>(static_cast<double>(size) * (1.0 - options_.min_saving));
  if (limit == 0) return false;
  // A destination of exactly `limit` bytes lets zstd give up as soon as the
  // output would not pay (dstSize_tooSmall), instead of finishing the file.
  dst->resize(limit);
  size_t n = ZSTD_compressCCtx(cctx_, dst->data(), limit, data, size, options_.zstd_level);
  if (ZSTD_isError(n)) return false;
  dst->resize(n);
  return true;
}

Status PayloadEncoder::Encode(const char* data, size_t size, EncodedPayload* out) {
  out->bytes.clear();
  const uint32_t fs = options_.frame_size;
  if (size <= fs) {
    if (TryCompress(data, size, &out->bytes)) {
      out->codec = Codec::kZstd;
      out->checksum = Checksum(out->bytes.data(), out->bytes.size());
    } else {
      out->bytes.clear();
      out->codec = Codec::kRaw;
      out->checksum = Checksum(data, size);
    }
    return Status::Ok();
  }
  const uint64_t frames = (size + fs - 1) / fs;
  if (frames > UINT32_MAX) return Status::Unsupported("file too large for its frame size");
  FrameTableHeader th{kFrameTableMagic, fs, static_cast<uint32_t>(frames), 0};
  std::vector<FrameEntry> table(frames);
  // The frames go straight after room for the table, which is filled last:
  // the payload is built in one buffer (at most the file's size plus the table).
  const size_t table_bytes = sizeof th + frames * sizeof(FrameEntry);
  out->bytes.reserve(table_bytes + size);
  out->bytes.resize(table_bytes);
  for (uint64_t i = 0; i < frames; ++i) {
    const char* src = data + i * fs;
    size_t len = std::min<uint64_t>(fs, size - i * fs);
    FrameEntry& e = table[i];
    if (TryCompress(src, len, &scratch_)) {
      e.codec = static_cast<uint8_t>(Codec::kZstd);
      e.stored_size = static_cast<uint32_t>(scratch_.size());
      e.checksum = Checksum(scratch_.data(), scratch_.size());
      out->bytes.insert(out->bytes.end(), scratch_.begin(), scratch_.end());
    } else {
      e.codec = static_cast<uint8_t>(Codec::kRaw);
      e.stored_size = static_cast<uint32_t>(len);
      e.checksum = Checksum(src, len);
      out->bytes.insert(out->bytes.end(), src, src + len);
    }
  }
  // Framed even when no frame compressed (16 bytes per frame): per-frame
  // checksums let a read at any offset verify only the frames it touches,
  // where a raw payload's one checksum would need the whole file.
  out->codec = Codec::kFramed;
  std::memcpy(out->bytes.data(), &th, sizeof th);
  std::memcpy(out->bytes.data() + sizeof th, table.data(), frames * sizeof(FrameEntry));
  out->checksum = Checksum(out->bytes.data(), table_bytes);
  return Status::Ok();
}

PayloadDecoder::PayloadDecoder() : dctx_(ZSTD_createDCtx()) {}
PayloadDecoder::~PayloadDecoder() { ZSTD_freeDCtx(dctx_); }

Status PayloadDecoder::DecodeFrame(const char* src, size_t stored, uint8_t codec, uint64_t checksum,
                                   char* dst, size_t raw, const std::string& what) {
  if (Checksum(src, stored) != checksum) return Status::Corruption(what + ": checksum mismatch");
  if (codec == static_cast<uint8_t>(Codec::kRaw)) {
    if (stored != raw) return Status::Corruption(what + ": raw frame has the wrong size");
    std::memcpy(dst, src, raw);
    return Status::Ok();
  }
  if (codec != static_cast<uint8_t>(Codec::kZstd)) {
    return Status::Corruption(what + ": unknown codec " + std::to_string(codec));
  }
  size_t n = ZSTD_decompressDCtx(dctx_, dst, raw, src, stored);
  if (ZSTD_isError(n)) {
    return Status::Corruption(what + ": zstd: " + ZSTD_getErrorName(n));
  }
  if (n != raw) return Status::Corruption(what + ": decoded to the wrong size");
  return Status::Ok();
}

Status PayloadDecoder::DecodeWhole(const RandomAccessFile& pack, const PayloadLocation& loc,
                                   char* dst, const std::string& what) {
  if (loc.codec == Codec::kRaw) {  // straight into place, checked there
    if (loc.stored_size != loc.size) return Status::Corruption(what + ": raw size mismatch");
    CLAIRFS_RETURN_IF_ERROR(pack.ReadExact(loc.offset, loc.size, dst));
    if (Checksum(dst, loc.size) != loc.checksum) {
      return Status::Corruption(what + ": checksum mismatch");
    }
    return Status::Ok();
  }
  stored_.resize(loc.stored_size);
  CLAIRFS_RETURN_IF_ERROR(pack.ReadExact(loc.offset, loc.stored_size, stored_.data()));
  return DecodeFrame(stored_.data(), loc.stored_size, static_cast<uint8_t>(loc.codec), loc.checksum,
                     dst, loc.size, what);
}

Result<uint64_t> FrameTableBytes(const char* data, size_t size) {
  FrameTableHeader th;
  if (size < sizeof th) return Status::Corruption("frame table header truncated");
  std::memcpy(&th, data, sizeof th);
  return sizeof th + uint64_t{th.frame_count} * sizeof(FrameEntry);
}

Result<std::shared_ptr<const FrameTable>> ParseFrameTable(const char* data, size_t size,
                                                          const PayloadLocation& loc,
                                                          const std::string& what) {
  FrameTableHeader th;
  if (loc.stored_size < sizeof th || size < sizeof th) {
    return Status::Corruption(what + ": frame table truncated");
  }
  std::memcpy(&th, data, sizeof th);
  const uint64_t table_bytes = sizeof th + uint64_t{th.frame_count} * sizeof(FrameEntry);
  if (th.magic != kFrameTableMagic || th.frame_size == 0 || table_bytes > loc.stored_size ||
      uint64_t{th.frame_count} * th.frame_size < loc.size) {
    return Status::Corruption(what + ": bad frame table");
  }
  if (table_bytes > size) return Status::Corruption(what + ": frame table truncated");
  if (Checksum(data, table_bytes) != loc.checksum) {
    return Status::Corruption(what + ": frame table checksum mismatch");
  }
  auto t = std::make_shared<FrameTable>();
  t->frame_size = th.frame_size;
  t->table_bytes = table_bytes;
  t->entries.resize(th.frame_count);
  if (th.frame_count > 0) {
    std::memcpy(t->entries.data(), data + sizeof th, th.frame_count * sizeof(FrameEntry));
  }
  t->starts.resize(th.frame_count);
  uint64_t pos = table_bytes;  // u32 sizes: no u64 overflow below 2^32 frames
  for (uint32_t i = 0; i < th.frame_count; ++i) {
    t->starts[i] = pos;
    pos += t->entries[i].stored_size;
  }
  return std::shared_ptr<const FrameTable>(std::move(t));
}

Status ReadTableAndFrame(const ReadAtFn& read, uint64_t pack_size, uint64_t payload,
                         uint64_t file_byte, size_t limit, std::vector<char>* out) {
  const auto outside = [] { return Status::InvalidArgument("frame read outside the pack"); };
  FrameTableHeader th;
  if (payload > pack_size || pack_size - payload < sizeof th) return outside();
  CLAIRFS_RETURN_IF_ERROR(read(payload, sizeof th, &th));
  const uint64_t table_bytes = sizeof th + uint64_t{th.frame_count} * sizeof(FrameEntry);
  if (th.magic != kFrameTableMagic || th.frame_size == 0 ||
      file_byte / th.frame_size >= th.frame_count) {
    return Status::Corruption("no frame table, or no such frame in it");
  }
  if (table_bytes > pack_size - payload) return outside();
  if (table_bytes > limit) return Status::InvalidArgument("frame table over the read limit");
  out->resize(table_bytes);
  CLAIRFS_RETURN_IF_ERROR(read(payload, table_bytes, out->data()));
  const auto* entries = reinterpret_cast<const FrameEntry*>(out->data() + sizeof th);
  const uint64_t index = file_byte / th.frame_size;
  uint64_t pos = payload + table_bytes;
  for (uint64_t i = 0; i < index; ++i) pos += entries[i].stored_size;
  const uint32_t stored = entries[index].stored_size;
  if (pos > pack_size || stored > pack_size - pos) return outside();
  if (stored > limit - table_bytes) return Status::InvalidArgument("frame over the read limit");
  out->resize(table_bytes + stored);
  return read(pos, stored, out->data() + table_bytes);
}

Result<bool> SplitTableAndFrame(const char* answer, size_t size, char* frame_dst, size_t frame_len,
                                std::vector<char>* table) {
  auto table_bytes = FrameTableBytes(answer, size);
  if (!table_bytes.ok()) return table_bytes.status();
  if (*table_bytes > size) return Status::Corruption("frame table longer than its answer");
  const size_t frame = size - static_cast<size_t>(*table_bytes);
  if (frame == frame_len && frame_len > 0) {
    table->assign(answer, answer + *table_bytes);
    std::memcpy(frame_dst, answer + *table_bytes, frame);
    return true;
  }
  table->assign(answer, answer + size);
  return false;
}

Result<std::shared_ptr<const FrameTable>> PayloadDecoder::ReadTable(const RandomAccessFile& pack,
                                                                    const PayloadLocation& loc,
                                                                    const std::string& what) {
  FrameTableHeader th;
  if (loc.stored_size < sizeof th) return Status::Corruption(what + ": frame table truncated");
  CLAIRFS_RETURN_IF_ERROR(pack.ReadExact(loc.offset, sizeof th, &th));
  auto table_bytes = FrameTableBytes(reinterpret_cast<const char*>(&th), sizeof th);
  // Checked before the table is allocated: a damaged count must not cost memory.
  if (*table_bytes > loc.stored_size) return Status::Corruption(what + ": bad frame table");
  table_.resize(*table_bytes);
  CLAIRFS_RETURN_IF_ERROR(pack.ReadExact(loc.offset, table_.size(), table_.data()));
  return ParseFrameTable(table_.data(), table_.size(), loc, what);
}

Result<size_t> PayloadDecoder::Read(const RandomAccessFile& pack, const PayloadLocation& loc,
                                    uint64_t offset, size_t length, char* dst,
                                    const std::string& what,
                                    std::shared_ptr<const FrameTable>* table) {
  // length 0 returns here: (offset + length - 1) below would underflow at offset 0.
  if (offset >= loc.size || length == 0) return size_t{0};
  length = static_cast<size_t>(std::min<uint64_t>(length, loc.size - offset));
  if (loc.codec != Codec::kFramed) {
    if (offset == 0 && length == loc.size) {
      CLAIRFS_RETURN_IF_ERROR(DecodeWhole(pack, loc, dst, what));
    } else {
      frame_.resize(loc.size);
      CLAIRFS_RETURN_IF_ERROR(DecodeWhole(pack, loc, frame_.data(), what));
      std::memcpy(dst, frame_.data() + offset, length);
    }
    return length;
  }
  std::shared_ptr<const FrameTable> own;
  std::shared_ptr<const FrameTable>& t = table != nullptr ? *table : own;
  // The first frame's stored bytes when they came with the table: in `dst`
  // itself (in_place), or after the table in table_.
  const char* fetched = nullptr;
  size_t fetched_size = 0;
  bool in_place = false;
  if (t == nullptr) {
    auto one = pack.FetchFrame(loc.offset, offset, dst, length, &table_);
    Result<std::shared_ptr<const FrameTable>> parsed = Status::Corruption(what);
    if (one.has_value()) {
      if (!one->ok()) return one->status();
      parsed = ParseFrameTable(table_.data(), table_.size(), loc, what);
      if (parsed.ok()) {
        in_place = **one;
        fetched = in_place ? dst : table_.data() + (*parsed)->table_bytes;
        fetched_size = in_place ? length : table_.size() - (*parsed)->table_bytes;
      }
    } else {
      parsed = ReadTable(pack, loc, what);
    }
    if (!parsed.ok()) return parsed.status();
    t = *parsed;
  }
  const FrameTable& ft = *t;
  const uint64_t fs = ft.frame_size;
  const uint64_t payload_end = loc.offset + loc.stored_size;
  const uint64_t first = offset / fs, last = (offset + length - 1) / fs;
  for (uint64_t i = first; i <= last; ++i) {
    const FrameEntry& e = ft.entries[i];
    const uint64_t pos = loc.offset + ft.starts[i];
    const uint64_t fstart = i * fs;
    const size_t raw = static_cast<size_t>(std::min<uint64_t>(fs, loc.size - fstart));
    const auto frame_what = [&] { return what + " (frame " + std::to_string(i) + ")"; };
    if (pos + e.stored_size > payload_end) {
      return Status::Corruption(what + ": frame " + std::to_string(i) + " outside the payload");
    }
    const uint64_t want_lo = std::max(offset, fstart);
    const uint64_t want_hi = std::min<uint64_t>(offset + length, fstart + raw);
    char* out = dst + (want_lo - offset);
    const bool whole = want_lo == fstart && want_hi == fstart + raw;
    const bool raw_whole =
        whole && e.codec == static_cast<uint8_t>(Codec::kRaw) && e.stored_size == raw;
    // The frame's stored bytes to decode, or none when it is a whole raw
    // frame already in place (then only checked). Not src == nullptr: an
    // empty vector's data() may be null too (a damaged entry of size 0).
    const char* src = nullptr;
    bool raw_in_place = false;
    if (i == first && fetched != nullptr) {
      if (fetched_size != e.stored_size) {
        return Status::Corruption(frame_what() + ": fetched with the wrong size");
      }
      if (in_place && !raw_whole) {  // not where it belongs after all (rare): decode a copy
        stored_.assign(dst, dst + fetched_size);
        src = stored_.data();
      } else if (!in_place) {
        src = fetched;
      } else {
        raw_in_place = true;
      }
    } else if (raw_whole) {
      // Straight into place and checked there, like a raw file: no detour.
      CLAIRFS_RETURN_IF_ERROR(pack.ReadExact(pos, raw, out));
      raw_in_place = true;
    } else {
      stored_.resize(e.stored_size);
      CLAIRFS_RETURN_IF_ERROR(pack.ReadExact(pos, e.stored_size, stored_.data()));
      src = stored_.data();
    }
    if (raw_in_place) {
      if (Checksum(out, raw) != e.checksum) {
        return Status::Corruption(frame_what() + ": checksum mismatch");
      }
    } else if (whole) {
      CLAIRFS_RETURN_IF_ERROR(
          DecodeFrame(src, e.stored_size, e.codec, e.checksum, out, raw, frame_what()));
    } else {
      frame_.resize(raw);
      CLAIRFS_RETURN_IF_ERROR(
          DecodeFrame(src, e.stored_size, e.codec, e.checksum, frame_.data(), raw, frame_what()));
      std::memcpy(out, frame_.data() + (want_lo - fstart), want_hi - want_lo);
    }
  }
  // A reader moving through a large file will want the next frames next: let
  // the pack's file system fetch them while this reply goes out.
  const uint64_t pos = loc.offset + ft.starts[last] + ft.entries[last].stored_size;
  uint64_t ahead = 0;
  for (uint64_t i = last + 1; i < ft.entries.size() && i <= last + kReadAheadFrames; ++i) {
    ahead += ft.entries[i].stored_size;
  }
  if (ahead > 0 && pos + ahead <= payload_end) pack.WillNeed(pos, ahead);
  return length;
}

Status PayloadDecoder::ReadAll(const RandomAccessFile& pack, const PayloadLocation& loc,
                               std::vector<char>* out, const std::string& what) {
  out->resize(loc.size);
  if (loc.size == 0) return Status::Ok();
  auto n = Read(pack, loc, 0, loc.size, out->data(), what);
  if (!n.ok()) return n.status();
  return Status::Ok();
}

}  // namespace clairfs::format
