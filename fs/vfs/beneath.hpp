// Paths resolved beneath a directory and nowhere else: the writable area's
// node-local and persistent trees are only ever touched through these, so no
// name the job writes (nor a symlink someone else put there) leads outside
// them. Opens go through openat2 with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS
// (Linux 5.6): a ".." that climbs out or any symlink on the way is refused
// (EXDEV, ELOOP). Calls that take a name (mkdirat, renameat, unlinkat) are
// given a single component in a directory opened that way, and none of them
// follows a symlink in that last component.
//
// `rel` is relative, components separated by '/', "" or "." for the base
// itself. Thread-safe (no state).
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <array>
#include <cstdint>
#include <ctime>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.hpp"

namespace clairfs::fs {

// An owned file descriptor (-1: none).
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Fd& operator=(Fd&& o) noexcept;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd();
  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

// openat2(base, rel, flags | O_CLOEXEC | O_NOFOLLOW, mode) confined to base.
Result<Fd> OpenBeneath(int base, std::string_view rel, int flags, mode_t mode = 0);
// The directory `rel` beneath base, made (with `mode`) where missing, parents
// included. O_DIRECTORY descriptor.
Result<Fd> MakeDirsBeneath(int base, std::string_view rel, mode_t mode);
// "a/b/c" -> {"a/b", "c"}; "c" -> {"", "c"}.
std::pair<std::string_view, std::string_view> SplitLast(std::string_view rel);
// Removes `name` in directory `dir` whatever it is, a directory with all it
// holds (symlinks are removed, never followed). Missing: ok.
Status RemoveTreeAt(int dir, const std::string& name);
// Copies `size` bytes of `in` to `out`, both from offset 0 (copy_file_range
// where the file systems allow it). Stops early, ok, if `in` is shorter.
Status CopyFileBytes(int in, int out, uint64_t size);
// Up to `size` bytes of `fd` from `offset`: fewer only at its end.
Result<std::string> ReadAt(int fd, uint64_t offset, size_t size);
// All of `bytes` to `fd` at `offset` (a write that makes no progress: ENOSPC);
// errors name `what`.
Status WriteAt(int fd, uint64_t offset, std::string_view bytes, const std::string& what);
// {mtime, mtime} for futimens (atime is shown as the mtime anyway).
std::array<timespec, 2> MtimeTimes(int64_t mtime_ns);
// Joins two relative paths ("" is the base).
std::string JoinRel(std::string_view a, std::string_view b);
// A stat's mtime in nanoseconds.
int64_t MtimeNs(const struct stat& st);
// The names in directory `fd` ("." and ".." left out), sorted; none if it
// cannot be read.
std::vector<std::string> ListDirAt(int fd);

}  // namespace clairfs::fs
