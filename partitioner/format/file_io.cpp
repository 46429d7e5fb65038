#include "partitioner/format/file_io.hpp"

#include <fcntl.h>  // also sync_file_range (GNU)
#include <sys/stat.h>
#include <sys/uio.h>  // preadv2, RWF_NOWAIT
#include <unistd.h>

#include <cstring>

namespace clairfs::format {

Result<std::unique_ptr<PosixRandomAccessFile>> PosixRandomAccessFile::Open(
    const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno(errno, "open " + path);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return Status::FromErrno(err, "stat " + path);
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    return Status::IOError(path + " is a directory, not a file", EISDIR);
  }
  return std::unique_ptr<PosixRandomAccessFile>(
      new PosixRandomAccessFile(path, fd, static_cast<uint64_t>(st.st_size)));
}

PosixRandomAccessFile::~PosixRandomAccessFile() { ::close(fd_); }

Status PosixRandomAccessFile::ReadExact(uint64_t offset, size_t size, void* dst) const {
  char* p = static_cast<char*>(dst);
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::pread(fd_, p + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno(errno, "read " + path_);
    }
    if (n == 0) {
      return Status::Corruption(path_ + ": truncated (wanted " + std::to_string(size) +
                                " bytes at offset " + std::to_string(offset) + ")");
    }
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

bool PosixRandomAccessFile::ReadIfCached(uint64_t offset, size_t size, void* dst) const {
  char* p = static_cast<char*>(dst);
  size_t done = 0;
  while (done < size) {
    iovec iov{p + done, size - done};
    const ssize_t n = ::preadv2(fd_, &iov, 1, static_cast<off_t>(offset + done), RWF_NOWAIT);
    if (n < 0 && errno == EINTR) continue;
    // A short count with RWF_NOWAIT: the next page is not cached (or the end
    // of the file); either way the caller reads the usual way.
    if (n <= 0 || static_cast<size_t>(n) < size - done) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

void PosixRandomAccessFile::WillNeed(uint64_t offset, size_t size) const {
  ::posix_fadvise(fd_, static_cast<off_t>(offset), static_cast<off_t>(size), POSIX_FADV_WILLNEED);
}

Status MemoryFile::ReadExact(uint64_t offset, size_t size, void* dst) const {
  if (offset > bytes_.size() || size > bytes_.size() - offset) {
    return Status::Corruption(name_ + ": truncated (wanted " + std::to_string(size) +
                              " bytes at offset " + std::to_string(offset) + ")");
  }
  // memcpy needs valid pointers even for 0 bytes, and an empty buffer may have none.
  if (size > 0) std::memcpy(dst, bytes_.data() + offset, size);
  return Status::Ok();
}

BufferedWriter::BufferedWriter(std::string path, int fd, size_t cap)
    : path_(std::move(path)), fd_(fd), buf_(cap) {}

Result<std::unique_ptr<BufferedWriter>> BufferedWriter::Create(const std::string& path,
                                                               size_t buffer_bytes) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::FromErrno(errno, "create " + path);
  return std::unique_ptr<BufferedWriter>(new BufferedWriter(path, fd, buffer_bytes));
}

BufferedWriter::~BufferedWriter() {
  if (fd_ >= 0) ::close(fd_);
}

static Status WriteAll(int fd, const char* p, size_t n, const std::string& path) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno(errno, "write " + path);
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return Status::Ok();
}

Status BufferedWriter::Flush() {
  const uint64_t start = written_ - used_;  // file offset of the buffer's first byte
  Status st = WriteAll(fd_, buf_.data(), used_, path_);
  // Start writeback of what was just written, without waiting for it: the
  // fsync at Close() then finds little left to do.
  if (st.ok() && used_ > 0) {
    ::sync_file_range(fd_, static_cast<off_t>(start), static_cast<off_t>(used_),
                      SYNC_FILE_RANGE_WRITE);
  }
  used_ = 0;
  return st;
}

Status BufferedWriter::Append(const void* data, size_t size) {
  if (size == 0) return Status::Ok();  // data may be null (an empty vector's data())
  const char* p = static_cast<const char*>(data);
  if (used_ + size <= buf_.size()) {
    std::memcpy(buf_.data() + used_, p, size);
    used_ += size;
    written_ += size;
    return Status::Ok();
  }
  CLAIRFS_RETURN_IF_ERROR(Flush());
  written_ += size;
  if (size >= buf_.size()) return WriteAll(fd_, p, size, path_);
  std::memcpy(buf_.data(), p, size);
  used_ = size;
  return Status::Ok();
}

Status BufferedWriter::Close(bool sync) {
  if (fd_ < 0) return Status::InvalidArgument(path_ + ": closed twice");
  Status st = Flush();
  if (st.ok() && sync && ::fsync(fd_) != 0) st = Status::FromErrno(errno, "fsync " + path_);
  if (::close(fd_) != 0 && st.ok()) st = Status::FromErrno(errno, "close " + path_);
  fd_ = -1;
  return st;
}

Status ReadWholeFile(const std::string& path, std::vector<char>* out, uint64_t expected_size) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno(errno, "open " + path);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return Status::FromErrno(err, "stat " + path);
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    return Status::IOError(path + " is a directory, not a file", EISDIR);
  }
  uint64_t size = static_cast<uint64_t>(st.st_size);
  if (expected_size != UINT64_MAX && size != expected_size) {
    ::close(fd);
    return Status::IOError(path + ": changed size while packing (was " +
                           std::to_string(expected_size) + " bytes, now " + std::to_string(size) +
                           ")");
  }
  out->resize(size);
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::read(fd, out->data() + done, size - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      return Status::FromErrno(err, "read " + path);
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  if (done != size) {
    return Status::IOError(path + ": shrank while being read (" + std::to_string(done) + " of " +
                           std::to_string(size) + " bytes)");
  }
  return Status::Ok();
}

Status WriteFileAtomically(const std::string& dir, const std::string& name,
                           const std::vector<char>& data) {
  std::string tmp = dir + "/." + name + ".tmp";
  auto w = BufferedWriter::Create(tmp, 1u << 20);
  if (!w.ok()) return w.status();
  Status st = (*w)->Append(data.data(), data.size());
  if (st.ok()) st = (*w)->Close(/*sync=*/true);
  if (st.ok() && ::rename(tmp.c_str(), (dir + "/" + name).c_str()) != 0) {
    st = Status::FromErrno(errno, "rename " + tmp);
  }
  if (!st.ok()) {
    ::unlink(tmp.c_str());
    return st;
  }
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);  // makes the rename durable; failure here loses nothing already written
    ::close(dfd);
  }
  return Status::Ok();
}

}  // namespace clairfs::format
