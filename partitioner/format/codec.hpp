// Encoding a file into its stored payload, and reading any byte range of a
// file back out of its payload with every checksum verified.
//
// Raw and zstd payloads cover small files; a file larger than the frame size
// is stored framed: a frame table, then independently encoded frames, so a
// read at any offset decodes at most the frames it touches.
// PayloadEncoder and PayloadDecoder each own a zstd context: single-thread,
// one per thread.
#pragma once

#include <zstd.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/status.hpp"
#include "partitioner/format/file_io.hpp"
#include "partitioner/format/layout.hpp"

namespace clairfs::format {

struct EncodeOptions {
  int zstd_level = 3;                       // 0 stores everything raw
  uint32_t frame_size = kDefaultFrameSize;  // files larger than this are framed
  double min_saving = 0.05;                 // keep zstd only if it saves at least this fraction
};

struct EncodedPayload {
  Codec codec = Codec::kRaw;
  std::vector<char> bytes;  // empty for kRaw: the caller writes the original bytes
  uint64_t checksum = 0;    // of the stored payload (kFramed: of the frame table)
};

class PayloadEncoder {
 public:
  explicit PayloadEncoder(EncodeOptions options);
  ~PayloadEncoder();
  PayloadEncoder(const PayloadEncoder&) = delete;
  PayloadEncoder& operator=(const PayloadEncoder&) = delete;

  // Encodes `size` bytes at `data`. For kRaw the payload is `data` itself and
  // out->bytes stays empty, which saves a copy of incompressible files.
  Status Encode(const char* data, size_t size, EncodedPayload* out);

 private:
  // Compresses into `dst` and returns true when that saves enough to keep.
  bool TryCompress(const char* data, size_t size, std::vector<char>* dst);
  EncodeOptions options_;
  ZSTD_CCtx* cctx_;
  std::vector<char> scratch_;
};

// Where a file's payload is: the fields of its NodeRecord.
struct PayloadLocation {
  uint64_t size;         // file bytes
  uint64_t offset;       // payload offset in the pack
  uint64_t stored_size;  // payload bytes
  uint64_t checksum;
  Codec codec;

  static PayloadLocation Of(const NodeRecord& r) {
    return {r.size, r.offset, r.stored_size, r.checksum, static_cast<Codec>(r.codec)};
  }
};

// A framed payload's frame table, checked against its node's checksum: what a
// reader needs to find and verify any frame without reading the table again.
// Immutable once built, so one table may be shared by every thread.
struct FrameTable {
  uint32_t frame_size = 0;
  uint64_t table_bytes = 0;  // header and entries, as stored
  std::vector<FrameEntry> entries;
  std::vector<uint64_t> starts;  // frame i's stored bytes begin at payload + starts[i]
  size_t MemoryBytes() const {
    return sizeof *this + entries.size() * (sizeof(FrameEntry) + sizeof(uint64_t));
  }
};

// The bytes a frame table takes (header and entries) by its header at `data`;
// Corruption when `size` is shorter than a header. Nothing else is checked.
Result<uint64_t> FrameTableBytes(const char* data, size_t size);

// Checks the frame table at `data` (`size` bytes, the table first) against
// `loc`, checksum included, and builds it. Corruption names `what`.
Result<std::shared_ptr<const FrameTable>> ParseFrameTable(const char* data, size_t size,
                                                          const PayloadLocation& loc,
                                                          const std::string& what);

// Positional read: exactly `size` bytes at `offset` into `dst`.
using ReadAtFn = std::function<Status(uint64_t offset, size_t size, void* dst)>;

// The serving side of a frame read: the frame table of the framed payload that
// starts at `payload` in a pack of `pack_size` bytes, then the stored bytes of
// the frame holding file byte `file_byte`, into `out`, read with `read` (two or
// three reads). Only bounds are checked - nothing past the pack, at most
// `limit` bytes in all, else InvalidArgument; a table that names no such frame
// is Corruption - the reader verifies the bytes against its manifest.
Status ReadTableAndFrame(const ReadAtFn& read, uint64_t pack_size, uint64_t payload,
                         uint64_t file_byte, size_t limit, std::vector<char>* out);

// The reading side: splits `answer` (what ReadTableAndFrame gave) into its
// table, copied to `table`, and its frame, copied to `frame_dst` when it is
// exactly `frame_len` bytes (a whole raw frame lands where it belongs, in one
// copy) and after the table in `table` otherwise. True when the frame went to
// `frame_dst`; Corruption when the answer is shorter than the table it starts with.
Result<bool> SplitTableAndFrame(const char* answer, size_t size, char* frame_dst, size_t frame_len,
                                std::vector<char>* table);

class PayloadDecoder {
 public:
  PayloadDecoder();
  ~PayloadDecoder();
  PayloadDecoder(const PayloadDecoder&) = delete;
  PayloadDecoder& operator=(const PayloadDecoder&) = delete;

  // Reads file bytes [offset, offset + length), clipped to the file size, into
  // `dst` and returns how many were read. `what` names the file and partition
  // in error messages. A checksum mismatch or undecodable frame is Corruption.
  // With `table`, a framed payload's table is taken from there when it holds
  // one (verified earlier against this `loc`), else read - together with the
  // first frame read, where `pack` can (RandomAccessFile::FetchFrame) - and
  // left there once verified, for the caller to keep.
  Result<size_t> Read(const RandomAccessFile& pack, const PayloadLocation& loc, uint64_t offset,
                      size_t length, char* dst, const std::string& what,
                      std::shared_ptr<const FrameTable>* table = nullptr);
  // Reads the whole file.
  Status ReadAll(const RandomAccessFile& pack, const PayloadLocation& loc, std::vector<char>* out,
                 const std::string& what);

 private:
  Status DecodeWhole(const RandomAccessFile& pack, const PayloadLocation& loc, char* dst,
                     const std::string& what);
  Status DecodeFrame(const char* src, size_t stored, uint8_t codec, uint64_t checksum, char* dst,
                     size_t raw, const std::string& what);
  // Reads and checks the frame table of `loc` (header, then the rest).
  Result<std::shared_ptr<const FrameTable>> ReadTable(const RandomAccessFile& pack,
                                                      const PayloadLocation& loc,
                                                      const std::string& what);
  ZSTD_DCtx* dctx_;
  std::vector<char> stored_;  // scratch for stored bytes
  std::vector<char> table_;   // scratch for a frame table as stored (and a frame fetched with it)
  std::vector<char> frame_;   // scratch for a decoded frame that is only partly wanted
};

}  // namespace clairfs::format
