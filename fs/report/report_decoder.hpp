// ReportDecoder: the wire protocol of the order reporters, version 1
// (docs/report.md), decoded incrementally. Feed it the bytes of one
// connection in chunks split anywhere; each complete frame becomes one typed
// message handed to a ReportSink.
//
// The decoder trusts nothing it reads: a frame's length is checked against the
// limit before a byte of it is buffered, the buffer grows only as bytes arrive
// (at most one frame), every count is checked against the bytes that remain,
// and the messages are views into the frame (no per-path allocation), so a
// frame never costs more memory than its own size. The first error (or a
// sink's refusal) is final: Feed returns it from then on.
//
// Single-thread (one decoder per connection). The views in a message are
// valid during the sink's call only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.hpp"

namespace clairfs::fs {

inline constexpr uint32_t kReportVersion = 1;

enum class ReportFrame : uint8_t {
  kHello = 1,
  kTablePaths = 2,
  kTableFiles = 3,
  kAlias = 4,
  kOrder = 5,
  kLoader = 6,
  kSettings = 7,
  kEpoch = 8,
  kGuess = 9,
};
// "HELLO", "TABLE_PATHS", ...; "frame type N" for anything else.
std::string ReportFrameName(uint8_t type);

// NUL-terminated paths packed back to back (validated by the decoder).
class PathList {
 public:
  class Iterator {
   public:
    explicit Iterator(const char* p) : p_(p) {}
    std::string_view operator*() const { return std::string_view(p_); }
    Iterator& operator++() {
      p_ += std::strlen(p_) + 1;
      return *this;
    }
    bool operator!=(const Iterator& o) const { return p_ != o.p_; }

   private:
    const char* p_;
  };
  PathList() = default;
  PathList(std::string_view bytes, size_t count) : bytes_(bytes), count_(count) {}
  size_t size() const { return count_; }
  bool empty() const { return count_ == 0; }
  Iterator begin() const { return Iterator(bytes_.data()); }
  Iterator end() const { return Iterator(bytes_.data() + bytes_.size()); }
  std::vector<std::string> ToVector() const {
    std::vector<std::string> out;
    for (std::string_view p : *this) out.emplace_back(p);
    return out;
  }

 private:
  std::string_view bytes_;
  size_t count_ = 0;
};

// Little-endian u32 values packed back to back.
class U32List {
 public:
  U32List() = default;
  explicit U32List(std::string_view bytes) : bytes_(bytes) {}
  size_t size() const { return bytes_.size() / 4; }
  bool empty() const { return bytes_.empty(); }
  uint32_t operator[](size_t i) const;
  std::vector<uint32_t> ToVector() const;

 private:
  std::string_view bytes_;
};

struct ReportHello {
  int64_t version = -1;  // absent integer keys are -1
  std::string role;      // "main", "worker", or what was sent ("" if absent)
  int64_t pid = -1;
  int64_t rank = -1;
  int64_t world_size = -1;
  int64_t local_rank = -1;
  int64_t local_size = -1;
  std::string framework;
};

struct ReportTablePaths {
  uint64_t table = 0;
  uint32_t first = 0;
  PathList paths;  // entries first, first + 1, ...
};

struct ReportFileRecord {
  uint32_t index = 0;
  PathList paths;
};

// The records of a TABLE_FILES frame (validated by the decoder).
class FileRecordList {
 public:
  class Iterator {
   public:
    explicit Iterator(const char* p) : p_(p) {}
    ReportFileRecord operator*() const;
    Iterator& operator++();
    bool operator!=(const Iterator& o) const { return p_ != o.p_; }

   private:
    const char* p_;
  };
  FileRecordList() = default;
  FileRecordList(std::string_view bytes, size_t count) : bytes_(bytes), count_(count) {}
  size_t size() const { return count_; }
  Iterator begin() const { return Iterator(bytes_.data()); }
  Iterator end() const { return Iterator(bytes_.data() + bytes_.size()); }

 private:
  std::string_view bytes_;
  size_t count_ = 0;
};

struct ReportTableFiles {
  uint64_t table = 0;
  FileRecordList records;
};

struct ReportAlias {
  uint64_t alias = 0;
  uint64_t table = 0;
};

// ORDER, or GUESS (the same layout): the next epoch's likely order, which
// the daemon may prefetch from until that epoch's ORDER arrives.
struct ReportOrder {
  uint64_t table = 0;
  uint64_t stream = 0;
  uint64_t epoch = 0;
  bool last = false;
  U32List indices;
  bool guess = false;  // a GUESS frame
};

// The shape of a loader (LOADER): how far out of order its opens may come.
struct ReportLoader {
  uint64_t stream = 0;
  int64_t batch_size = -1;  // absent integer keys are -1
  int64_t num_workers = -1;
  int64_t prefetch_factor = -1;
};

// A loader's sampler settings (SETTINGS): the daemon generates its epochs.
// Keys and values as sent, in order (a key sent twice is an error).
inline constexpr size_t kMaxSettings = 64;  // keys in one SETTINGS frame

struct ReportSettings {
  uint64_t stream = 0;
  std::vector<std::pair<std::string_view, std::string_view>> values;
};

// Loader `stream` of a SETTINGS frame starts its epoch `epoch` (EPOCH).
struct ReportEpoch {
  uint64_t stream = 0;
  uint64_t epoch = 0;
};

// Receives the decoded frames of one connection, in order. A non-OK Status
// refuses the frame: the decoder stops and returns it (prefixed "frame N: ").
class ReportSink {
 public:
  virtual ~ReportSink() = default;
  virtual Status OnHello(const ReportHello& m) = 0;
  virtual Status OnTablePaths(const ReportTablePaths& m) = 0;
  virtual Status OnTableFiles(const ReportTableFiles& m) = 0;
  virtual Status OnAlias(const ReportAlias& m) = 0;
  virtual Status OnOrder(const ReportOrder& m) = 0;
  virtual Status OnLoader(const ReportLoader& m) {
    (void)m;
    return Status::Ok();
  }
  virtual Status OnSettings(const ReportSettings& m) {
    (void)m;
    return Status::Ok();
  }
  virtual Status OnEpoch(const ReportEpoch& m) {
    (void)m;
    return Status::Ok();
  }
};

class ReportDecoder {
 public:
  // `max_frame`: the largest payload accepted, in bytes (docs: 16 MiB).
  explicit ReportDecoder(uint32_t max_frame = 16u << 20) : max_frame_(max_frame) {}

  // Decodes what `data` completes and hands each frame to `sink`. Corruption
  // naming the frame and the rule it breaks; a sink's Status as it is (its
  // message prefixed). After an error, every call returns that error.
  Status Feed(const char* data, size_t size, ReportSink* sink);

  uint64_t frames() const { return frames_; }  // frames decoded and accepted
  // Bytes buffered for the frame in progress (its header included).
  size_t buffered() const { return have_header_ + frame_.size(); }

 private:
  Status Frame(ReportSink* sink);
  Status Fail(Status st);

  const uint32_t max_frame_;
  uint64_t frames_ = 0;
  bool saw_hello_ = false;
  char header_[4] = {};
  size_t have_header_ = 0;
  uint32_t length_ = 0;
  std::vector<char> frame_;  // the payload so far, at most length_ bytes
  Status error_;
};

}  // namespace clairfs::fs
