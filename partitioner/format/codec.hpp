// Encoding a file into its stored payload, and reading any byte range of a
// file back out of its payload with every checksum verified.
//
// Raw and zstd payloads cover small files; a file larger than the frame size
// is stored framed: a frame table, then independently encoded frames, so a
// read at any offset decodes at most the frames it touches.
// PayloadEncoder and PayloadDecoder each own a zstd context: single-thread,
// one per thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <zstd.h>

#include "base/status.hpp"
#include "partitioner/format/file_io.hpp"
#include "partitioner/format/layout.hpp"

namespace clairfs::format {

struct EncodeOptions {
  int zstd_level = 3;                     // 0 stores everything raw
  uint32_t frame_size = kDefaultFrameSize;  // files larger than this are framed
  double min_saving = 0.05;               // keep zstd only if it saves at least this fraction
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

class PayloadDecoder {
 public:
  PayloadDecoder();
  ~PayloadDecoder();
  PayloadDecoder(const PayloadDecoder&) = delete;
  PayloadDecoder& operator=(const PayloadDecoder&) = delete;

  // Reads file bytes [offset, offset + length), clipped to the file size, into
  // `dst` and returns how many were read. `what` names the file and partition
  // in error messages. A checksum mismatch or undecodable frame is Corruption.
  Result<size_t> Read(const RandomAccessFile& pack, const PayloadLocation& loc, uint64_t offset,
                      size_t length, char* dst, const std::string& what);
  // Reads the whole file.
  Status ReadAll(const RandomAccessFile& pack, const PayloadLocation& loc,
                 std::vector<char>* out, const std::string& what);

 private:
  Status DecodeWhole(const RandomAccessFile& pack, const PayloadLocation& loc, char* dst,
                     const std::string& what);
  Status DecodeFrame(const char* src, size_t stored, uint8_t codec, uint64_t checksum, char* dst,
                     size_t raw, const std::string& what);
  ZSTD_DCtx* dctx_;
  std::vector<char> stored_;  // scratch for stored bytes
  std::vector<char> frame_;   // scratch for a decoded frame that is only partly wanted
};

}  // namespace clairfs::format
