#include "fs/fuse/mount_tuning.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace clairfs::fs {
namespace {

// mountinfo writes space, tab, newline and backslash as \ooo octal escapes.
std::string Escape(const std::string& path) {
  std::string out;
  for (char c : path) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\\') {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\%03o", static_cast<unsigned char>(c));
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

struct MountEntry {
  std::string device;  // MAJ:MIN; "" when nothing is mounted there
  std::string type;    // "fuse.clairfs" for ours
};

// The topmost file system mounted at `mount` (/proc/self/mountinfo: the
// fields after the optional ones, which end at "-", are type and source).
MountEntry MountedAt(const std::string& mount) {
  std::ifstream info("/proc/self/mountinfo");
  const std::string want = Escape(mount);
  MountEntry found;
  for (std::string line; std::getline(info, line);) {
    std::istringstream fields(line);
    std::string id, parent, dev, root, point, field;
    fields >> id >> parent >> dev >> root >> point;
    if (point != want) continue;
    found = {dev, ""};  // the last match is the topmost mount
    while (fields >> field && field != "-") {
    }
    fields >> found.type;
  }
  return found;
}

std::string MountedDevice(const std::string& mount) { return MountedAt(mount).device; }

// A clairfs mount whose daemon is gone: opening its root sends OPENDIR, which
// a connection without a daemon answers ENOTCONN (ECONNABORTED when the
// request raced the connection's end).
bool DeadClairfsMount(const std::string& mount) {
  if (MountedAt(mount).type != "fuse.clairfs") return false;
  const int fd = ::open(mount.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::close(fd);
    return false;
  }
  return errno == ENOTCONN || errno == ECONNABORTED;
}

// Detaches the mount: umount2 as root, fusermount3 -u -z (the mount's owner)
// otherwise. True when nothing is mounted there any more.
bool DetachMount(const std::string& mount) {
  if (::umount2(mount.c_str(), MNT_DETACH) != 0 && errno == EPERM) {
    const char* argv[] = {"fusermount3", "-u", "-z", "-q", mount.c_str(), nullptr};
    pid_t pid = 0;
    if (::posix_spawnp(&pid, "fusermount3", nullptr, nullptr, const_cast<char**>(argv), environ) ==
        0) {
      int status = 0;
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
    }
  }
  return MountedAt(mount).device.empty();
}

// /sys/class/bdi/MAJ:MIN/read_ahead_kb of the mount, or "" if not mounted.
std::string Knob(const std::string& mount) {
  const std::string device = MountedDevice(mount);
  return device.empty() ? "" : "/sys/class/bdi/" + device + "/read_ahead_kb";
}

}  // namespace

Status PrepareMountPoint(const std::string& mount, bool* detached_stale) {
  *detached_stale = false;
  struct stat st;
  if (::stat(mount.c_str(), &st) != 0) {
    if (errno == ENOTDIR) {
      return Status::InvalidArgument("mount point " + mount +
                                     " cannot be created: a directory on its path is a file");
    }
    if (errno != ENOENT) return Status::FromErrno(errno, "mount point " + mount);
    std::error_code ec;
    std::filesystem::create_directories(mount, ec);
    if (ec) {
      return Status::FromErrno(ec.value(), "mount point " + mount + " cannot be created");
    }
    return Status::Ok();
  }
  if (!S_ISDIR(st.st_mode)) {
    return Status::InvalidArgument("mount point " + mount + " exists and is not a directory");
  }
  std::error_code ec;
  const std::filesystem::path real = std::filesystem::canonical(mount, ec);
  const std::string point = ec ? mount : real.string();
  if (!MountedDevice(point).empty() && DeadClairfsMount(point) && DetachMount(point)) {
    *detached_stale = true;
  }
  if (!MountedDevice(point).empty()) {
    return Status::InvalidArgument("mount point " + mount +
                                   " is already a mount point (another clairfsd? unmount it "
                                   "with fusermount3 -u " +
                                   mount + ")");
  }
  DIR* dir = ::opendir(mount.c_str());
  if (dir == nullptr) return Status::FromErrno(errno, "mount point " + mount);
  std::string entry;
  while (dirent* e = ::readdir(dir)) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") {
      entry = name;
      break;
    }
  }
  ::closedir(dir);
  if (!entry.empty()) {
    return Status::InvalidArgument("mount point " + mount + " is not empty (it holds '" + entry +
                                   "', which the mount would hide); use an empty directory");
  }
  return Status::Ok();
}

uint64_t MountReadAhead(const std::string& mount) {
  const std::string knob = Knob(mount);
  if (knob.empty()) return 0;
  std::ifstream in(knob);
  uint64_t kb = 0;
  in >> kb;
  return in ? kb * 1024 : 0;
}

Status SetMountReadAhead(const std::string& mount, uint64_t bytes) {
  const std::string knob = Knob(mount);
  if (knob.empty()) return Status::NotFound(mount + ": not in /proc/self/mountinfo");
  std::ofstream out(knob);
  out << (bytes / 1024) << '\n';
  out.flush();
  if (!out) return Status::IOError(knob + ": cannot write (needs root)");
  return Status::Ok();
}

}  // namespace clairfs::fs
