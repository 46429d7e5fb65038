// Thin wrappers over the POSIX calls the format needs, each turning errno into
// a Status at the call site. Thread-safety is stated per class.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.hpp"

namespace clairfs::format {

// Positional reads from an immutable file. Implementations are thread-safe.
class RandomAccessFile {
 public:
  virtual ~RandomAccessFile() = default;
  // Reads exactly `size` bytes at `offset` into `dst`; a short file is Corruption.
  virtual Status ReadExact(uint64_t offset, size_t size, void* dst) const = 0;
  virtual const std::string& name() const = 0;
  // A hint that [offset, offset + size) will be read soon; may start reading
  // it in the background. Never fails; the default does nothing.
  virtual void WillNeed(uint64_t offset, size_t size) const {}
  // A stronger hint: a reader moving through a file in order will read
  // [offset, offset + size) next (one frame of a framed payload). A file whose
  // reads are round trips (a peer's pack) asks for it now and keeps the
  // answer for that read; the default is WillNeed.
  virtual void FetchAhead(uint64_t offset, size_t size) const { WillNeed(offset, size); }
  // Reads exactly `size` bytes at `offset` into `dst` only if that needs no
  // wait for a device (all of them in the page cache); false otherwise, and
  // then `dst` holds anything. Errors are false too: ReadExact reports them.
  // The default never reads.
  virtual bool ReadIfCached(uint64_t offset, size_t size, void* dst) const { return false; }
  // For a file whose every read is a round trip (a peer's pack): fetches in one
  // read the frame table of the framed payload that starts at `payload` and the
  // stored bytes of the frame holding file byte `file_byte`, unverified, and
  // places them as format::SplitTableAndFrame does (true: the frame went to
  // `frame_dst`). Nothing when the file has no such read (the default): the
  // caller reads the table, then the frame, with ReadExact.
  virtual std::optional<Result<bool>> FetchFrame(uint64_t payload, uint64_t file_byte,
                                                 char* frame_dst, size_t frame_len,
                                                 std::vector<char>* table) const {
    return std::nullopt;
  }
};

// A RandomAccessFile over a file descriptor (pread). Thread-safe.
class PosixRandomAccessFile final : public RandomAccessFile {
 public:
  static Result<std::unique_ptr<PosixRandomAccessFile>> Open(const std::string& path);
  ~PosixRandomAccessFile() override;
  Status ReadExact(uint64_t offset, size_t size, void* dst) const override;
  const std::string& name() const override { return path_; }
  // posix_fadvise(WILLNEED): the kernel reads the range into its page cache
  // asynchronously.
  void WillNeed(uint64_t offset, size_t size) const override;
  // preadv2 with RWF_NOWAIT (EAGAIN, or a short count, when a page is not cached).
  bool ReadIfCached(uint64_t offset, size_t size, void* dst) const override;
  uint64_t size() const { return size_; }

 private:
  PosixRandomAccessFile(std::string path, int fd, uint64_t size)
      : path_(std::move(path)), fd_(fd), size_(size) {}
  std::string path_;
  int fd_;
  uint64_t size_;
};

// A RandomAccessFile over bytes in memory (tests, and payloads already in RAM).
class MemoryFile final : public RandomAccessFile {
 public:
  MemoryFile(std::string name, std::vector<char> bytes)
      : name_(std::move(name)), bytes_(std::move(bytes)) {}
  Status ReadExact(uint64_t offset, size_t size, void* dst) const override;
  const std::string& name() const override { return name_; }
  std::vector<char>& bytes() { return bytes_; }

 private:
  std::string name_;
  std::vector<char> bytes_;
};

// Appends to a new file through a buffer. Single-thread.
class BufferedWriter {
 public:
  // Creates (or truncates) `path` for writing.
  static Result<std::unique_ptr<BufferedWriter>> Create(const std::string& path,
                                                        size_t buffer_bytes = 4u << 20);
  ~BufferedWriter();
  Status Append(const void* data, size_t size);
  // Flushes, fsyncs when asked, and closes. The writer is unusable after.
  Status Close(bool sync);
  uint64_t bytes_written() const { return written_; }
  const std::string& path() const { return path_; }

 private:
  BufferedWriter(std::string path, int fd, size_t cap);
  Status Flush();
  std::string path_;
  int fd_;
  std::vector<char> buf_;
  size_t used_ = 0;
  uint64_t written_ = 0;
};

// Reads a whole file. `expected_size` guards against a file that changed size
// since it was stat'ed (pass UINT64_MAX to accept any size).
Status ReadWholeFile(const std::string& path, std::vector<char>* out,
                     uint64_t expected_size = UINT64_MAX);

// Writes `data` to `dir/name` through a temporary file, fsync and rename, so a
// reader sees either the old file, or the whole new one.
Status WriteFileAtomically(const std::string& dir, const std::string& name,
                           const std::vector<char>& data);

}  // namespace clairfs::format
