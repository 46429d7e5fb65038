// The wire format of transport messages, shared by every Transport.
//
//   request batch:  BatchHeader{kRequestMagic, n}  then n x RequestEntry
//   reply batch:    BatchHeader{kReplyMagic, n}    then n x ReplyEntry, then
//                   the payload bytes of the entries back to back
//   notice batch:   BatchHeader{kNoticeMagic, n}   then n x (uint32 length,
//                   then that many bytes), in publication order
//
// A request is a range read (frame_at kNoFrame) or a frame read (frame_at: a
// byte of the file, length 0), whose reply payload is the frame table, then
// the frame (PackRead), or a read of a writable area's file (partition
// kAreaPartition, frame_at the file, a range of it). Decoding validates every count and length
// against the message size, so a malformed or truncated message is rejected whole, never read past
// its end; a frame read with a length is malformed too, and so is a notice of 0 or more than
// kMaxNoticeBytes bytes. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "fs/net/transport.hpp"

namespace clairfs::fs::wire {

inline constexpr uint32_t kRequestMagic = 0x51524643;  // "CFRQ"
inline constexpr uint32_t kReplyMagic = 0x50524643;    // "CFRP"
inline constexpr uint32_t kNoticeMagic = 0x544e4643;   // "CFNT"
inline constexpr uint32_t kMaxBatch = 1024;

struct BatchHeader {
  uint32_t magic;
  uint32_t count;
};

struct RequestEntry {
  uint64_t id;
  uint64_t offset;
  uint32_t partition;
  uint32_t length;
  uint64_t frame_at;  // PackRead::frame_at
};
static_assert(sizeof(RequestEntry) == 32);

struct ReplyEntry {
  uint64_t id;
  int32_t err;      // 0, or the errno of the failure
  uint32_t length;  // payload bytes that follow (0 on error)
};
static_assert(sizeof(ReplyEntry) == 16);

struct Request {
  uint64_t id;
  PackRead read;
};

struct Reply {
  uint64_t id;
  int32_t err;
  std::vector<char> data;
};

// A decoded reply: `data` points into the message it was decoded from.
struct ReplyView {
  uint64_t id;
  int32_t err;
  std::span<const char> data;
};

std::vector<char> EncodeRequests(const std::vector<Request>& requests);
Result<std::vector<Request>> DecodeRequests(const char* data, size_t size);

std::vector<char> EncodeReplies(const std::vector<Reply>& replies);
Result<std::vector<ReplyView>> DecodeReplies(const char* data, size_t size);

// At most kMaxBatch notices, each of 1 to kMaxNoticeBytes bytes (the caller's
// to ensure). Decoded notices point into the message they came from.
std::vector<char> EncodeNotices(const std::vector<std::span<const char>>& notices);
// The same, of notices it is given whole (tests, fuzzing).
std::vector<char> EncodeNotices(const std::vector<std::vector<char>>& notices);
Result<std::vector<std::span<const char>>> DecodeNotices(const char* data, size_t size);

}  // namespace clairfs::fs::wire
