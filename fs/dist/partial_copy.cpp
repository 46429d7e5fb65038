#include "fs/dist/partial_copy.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace clairfs::fs {

Result<std::unique_ptr<PartialCopy>> PartialCopy::Create(std::string path) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::FromErrno(errno, "create " + path);
  return std::unique_ptr<PartialCopy>(new PartialCopy(std::move(path), fd));
}

PartialCopy::~PartialCopy() { ::close(fd_); }

Status PartialCopy::Write(uint64_t offset, const void* data, size_t size) {
  {
    MutexLock lock(&mu_);
    if (disabled_) return Status::IOError(path_ + ": disabled after a failed write", EIO);
  }
  const char* p = static_cast<const char*>(data);
  for (size_t done = 0; done < size;) {
    const ssize_t n = ::pwrite(fd_, p + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : ENOSPC;
      Disable();
      return Status::FromErrno(err, "write " + path_);
    }
    done += static_cast<size_t>(n);
  }
  MutexLock lock(&mu_);
  if (!disabled_) present_.Add(offset, offset + size);
  return Status::Ok();
}

bool PartialCopy::ReadIfPresent(uint64_t offset, size_t size, void* dst) const {
  {
    MutexLock lock(&mu_);
    if (disabled_ || !present_.Covers(offset, offset + size)) return false;
  }
  return ReadExact(offset, size, dst).ok();
}

std::vector<std::pair<uint64_t, uint64_t>> PartialCopy::Gaps(uint64_t lo, uint64_t hi) const {
  MutexLock lock(&mu_);
  if (disabled_) return {{lo, hi}};
  return present_.Gaps(lo, hi);
}

Status PartialCopy::ReadExact(uint64_t offset, size_t size, void* dst) const {
  char* p = static_cast<char*>(dst);
  for (size_t done = 0; done < size;) {
    const ssize_t n = ::pread(fd_, p + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::FromErrno(errno, "read " + path_);
    if (n == 0) return Status::Corruption(path_ + ": short read at " + std::to_string(offset));
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

uint64_t PartialCopy::present_bytes() const {
  MutexLock lock(&mu_);
  return present_.bytes();
}

void PartialCopy::Disable() {
  MutexLock lock(&mu_);
  disabled_ = true;
  present_.Clear();
}

}  // namespace clairfs::fs
