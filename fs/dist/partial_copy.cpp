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
  claimed_.Remove(offset, offset + size);
  changed_.NotifyAll();
  return Status::Ok();
}

std::vector<std::pair<uint64_t, uint64_t>> PartialCopy::Claim(uint64_t lo, uint64_t hi) {
  MutexLock lock(&mu_);
  if (disabled_) return {{lo, hi}};
  std::vector<std::pair<uint64_t, uint64_t>> mine;
  for (const auto& [a, b] : present_.Gaps(lo, hi)) {
    for (const auto& gap : claimed_.Gaps(a, b)) mine.push_back(gap);
  }
  for (const auto& [a, b] : mine) claimed_.Add(a, b);
  return mine;
}

void PartialCopy::Abandon(uint64_t lo, uint64_t hi) {
  MutexLock lock(&mu_);
  claimed_.Remove(lo, hi);
  changed_.NotifyAll();
}

bool PartialCopy::AwaitPresent(uint64_t lo, uint64_t hi) const {
  MutexLock lock(&mu_);
  for (;;) {
    if (disabled_) return false;
    const auto absent = present_.Gaps(lo, hi);
    if (absent.empty()) return true;
    for (const auto& [a, b] : absent) {
      if (!claimed_.Covers(a, b)) return false;
    }
    changed_.Wait(&lock);
  }
}

bool PartialCopy::Holds(uint64_t lo, uint64_t hi) const {
  MutexLock lock(&mu_);
  return !disabled_ && present_.Covers(lo, hi);
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

Status PartialCopy::FetchClaimed(const std::vector<std::pair<uint64_t, uint64_t>>& claims,
                                 uint64_t lo, char* dst, const FetchFn& fetch, FillCounts* counts) {
  for (size_t i = 0; i < claims.size(); ++i) {
    const auto [a, b] = claims[i];
    Status st = fetch(a, static_cast<size_t>(b - a), dst + (a - lo));
    if (!st.ok()) {
      for (size_t j = i; j < claims.size(); ++j) Abandon(claims[j].first, claims[j].second);
      return st;
    }
    Status w = Write(a, dst + (a - lo), static_cast<size_t>(b - a));
    if (w.ok()) {
      counts->written += b - a;
    } else if (counts->write_error.ok()) {
      counts->write_error = w;
    }
  }
  return Status::Ok();
}

Status PartialCopy::Keep(uint64_t lo, uint64_t hi, char* buf, const FetchFn& fetch,
                         FillCounts* counts) {
  if (disabled()) return Status::Ok();
  return FetchClaimed(Claim(lo, hi), lo, buf, fetch, counts);
}

Status PartialCopy::Fill(uint64_t lo, uint64_t hi, char* dst, const FetchFn& fetch,
                         FillCounts* counts) {
  RangeSet mine;  // the bytes `dst` holds already
  for (;;) {
    const auto claims = Claim(lo, hi);
    CLAIRFS_RETURN_IF_ERROR(FetchClaimed(claims, lo, dst, fetch, counts));
    for (const auto& [a, b] : claims) mine.Add(a, b);
    const bool present = AwaitPresent(lo, hi);
    if (present || disabled()) {
      for (const auto& [a, b] : mine.Gaps(lo, hi)) {
        CLAIRFS_RETURN_IF_ERROR(present ? ReadExact(a, static_cast<size_t>(b - a), dst + (a - lo))
                                        : fetch(a, static_cast<size_t>(b - a), dst + (a - lo)));
      }
      return Status::Ok();
    }
    // A part's claim was abandoned (its fetch failed elsewhere): claim it here.
  }
}

bool PartialCopy::disabled() const {
  MutexLock lock(&mu_);
  return disabled_;
}

void PartialCopy::Disable() {
  MutexLock lock(&mu_);
  disabled_ = true;
  present_.Clear();
  claimed_.Clear();
  changed_.NotifyAll();
}

}  // namespace clairfs::fs
