#include "fs/fuse/mount_tuning.hpp"

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

// /sys/class/bdi/MAJ:MIN/read_ahead_kb of the mount, or "" if not mounted.
std::string Knob(const std::string& mount) {
  std::ifstream info("/proc/self/mountinfo");
  const std::string want = Escape(mount);
  std::string device;
  for (std::string line; std::getline(info, line);) {
    std::istringstream fields(line);
    std::string id, parent, dev, root, point;
    fields >> id >> parent >> dev >> root >> point;
    if (point == want) device = dev;  // the last match is the topmost mount
  }
  return device.empty() ? "" : "/sys/class/bdi/" + device + "/read_ahead_kb";
}

}  // namespace

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
