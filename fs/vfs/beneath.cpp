#include "fs/vfs/beneath.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <vector>

namespace clairfs::fs {

Fd& Fd::operator=(Fd&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(o.fd_, -1);
  }
  return *this;
}

Fd::~Fd() {
  if (fd_ >= 0) ::close(fd_);
}

Result<Fd> OpenBeneath(int base, std::string_view rel, int flags, mode_t mode) {
  const std::string path = rel.empty() ? std::string(".") : std::string(rel);
  open_how how{};
  how.flags = static_cast<uint64_t>(flags | O_CLOEXEC | O_NOFOLLOW);
  how.mode = (flags & (O_CREAT | O_TMPFILE)) != 0 ? mode : 0;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  for (;;) {
    const long fd = ::syscall(SYS_openat2, base, path.c_str(), &how, sizeof how);
    if (fd >= 0) return Fd(static_cast<int>(fd));
    if (errno == EINTR || errno == EAGAIN) continue;  // EAGAIN: a rename raced the walk
    return Status::FromErrno(errno, "open " + path);
  }
}

std::pair<std::string_view, std::string_view> SplitLast(std::string_view rel) {
  const size_t slash = rel.rfind('/');
  if (slash == std::string_view::npos) return {std::string_view(), rel};
  return {rel.substr(0, slash), rel.substr(slash + 1)};
}

std::array<timespec, 2> MtimeTimes(int64_t mtime_ns) {
  timespec t{static_cast<time_t>(mtime_ns / 1000000000), static_cast<long>(mtime_ns % 1000000000)};
  if (t.tv_nsec < 0) {
    t.tv_nsec += 1000000000;
    t.tv_sec -= 1;
  }
  return {t, t};
}

std::string JoinRel(std::string_view a, std::string_view b) {
  if (a.empty() || a == ".") return std::string(b);
  if (b.empty()) return std::string(a);
  std::string out(a);
  out += '/';
  out += b;
  return out;
}

Result<Fd> MakeDirsBeneath(int base, std::string_view rel, mode_t mode) {
  auto whole = OpenBeneath(base, rel, O_RDONLY | O_DIRECTORY);
  if (whole.ok() || whole.status().err() != ENOENT) return whole;
  auto dup = OpenBeneath(base, "", O_RDONLY | O_DIRECTORY);
  if (!dup.ok()) return dup;
  Fd dir = std::move(dup).value();
  size_t pos = 0;
  while (pos < rel.size()) {
    size_t slash = rel.find('/', pos);
    if (slash == std::string_view::npos) slash = rel.size();
    const std::string part(rel.substr(pos, slash - pos));
    pos = slash + 1;
    if (part.empty() || part == ".") continue;
    if (::mkdirat(dir.get(), part.c_str(), mode) != 0 && errno != EEXIST) {
      return Status::FromErrno(errno, "mkdir " + std::string(rel.substr(0, slash)));
    }
    auto next = OpenBeneath(dir.get(), part, O_RDONLY | O_DIRECTORY);
    if (!next.ok()) return next;
    dir = std::move(next).value();
  }
  return dir;
}

Status RemoveTreeAt(int dir, const std::string& name) {
  if (::unlinkat(dir, name.c_str(), 0) == 0 || errno == ENOENT) return Status::Ok();
  if (errno != EISDIR && errno != EPERM) return Status::FromErrno(errno, "unlink " + name);
  auto sub = OpenBeneath(dir, name, O_RDONLY | O_DIRECTORY);
  if (!sub.ok()) return sub.status().err() == ENOENT ? Status::Ok() : sub.status();
  std::vector<std::string> names;
  {
    DIR* d = ::fdopendir(::dup(sub->get()));
    if (d == nullptr) return Status::FromErrno(errno, "list " + name);
    while (dirent* e = ::readdir(d)) {
      const std::string n = e->d_name;
      if (n != "." && n != "..") names.push_back(n);
    }
    ::closedir(d);
  }
  for (const std::string& n : names) CLAIRFS_RETURN_IF_ERROR(RemoveTreeAt(sub->get(), n));
  if (::unlinkat(dir, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) {
    return Status::FromErrno(errno, "rmdir " + name);
  }
  return Status::Ok();
}

Status CopyFileBytes(int in, int out, uint64_t size) {
  uint64_t done = 0;
  bool plain = false;
  std::vector<char> buf;
  while (done < size) {
    if (!plain) {
      const ssize_t n = ::copy_file_range(in, nullptr, out, nullptr, size - done, 0);
      if (n > 0) {
        done += static_cast<uint64_t>(n);
        continue;
      }
      if (n == 0) break;  // the source got shorter
      if (errno == EINTR) continue;
      if (errno != EXDEV && errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP) {
        return Status::FromErrno(errno, "copy");
      }
      plain = true;
      buf.resize(1 << 20);
    }
    const ssize_t r = ::pread(in, buf.data(), buf.size(), static_cast<off_t>(done));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return Status::FromErrno(errno, "read");
    if (r == 0) break;
    CLAIRFS_RETURN_IF_ERROR(
        WriteAt(out, done, std::string_view(buf.data(), static_cast<size_t>(r)), "write"));
    done += static_cast<uint64_t>(r);
  }
  return Status::Ok();
}

Result<std::string> ReadAt(int fd, uint64_t offset, size_t size) {
  std::string out(size, '\0');
  size_t got = 0;
  while (got < size) {
    const ssize_t n = ::pread(fd, out.data() + got, size - got, static_cast<off_t>(offset + got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::FromErrno(errno, "read");
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  out.resize(got);
  return out;
}

Status WriteAt(int fd, uint64_t offset, std::string_view bytes, const std::string& what) {
  for (size_t done = 0; done < bytes.size();) {
    const ssize_t n =
        ::pwrite(fd, bytes.data() + done, bytes.size() - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::FromErrno(errno, what);
    if (n == 0) return Status::FromErrno(ENOSPC, what);
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

int64_t MtimeNs(const struct stat& st) {
  return int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
}

std::vector<std::string> ListDirAt(int fd) {
  std::vector<std::string> names;
  DIR* d = ::fdopendir(::dup(fd));
  if (d == nullptr) return names;
  while (dirent* e = ::readdir(d)) {
    const std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(n);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace clairfs::fs
