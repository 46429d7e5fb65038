#include "partitioner/pack/memory_limit.hpp"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>
#include <system_error>

namespace clairfs::pack {
namespace {

// The number in `file` ("max" and anything unreadable: no limit).
uint64_t ReadLimit(const std::string& file) {
  std::ifstream in(file);
  std::string text;
  if (!(in >> text)) return UINT64_MAX;
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return UINT64_MAX;
  return v;
}

// The smallest limit in `file_name` of `dir`/`path` and each directory above
// it up to `dir` itself.
uint64_t SmallestUpward(const std::string& dir, std::string path, const std::string& file_name) {
  uint64_t limit = UINT64_MAX;
  for (;;) {
    limit = std::min(limit, ReadLimit(dir + path + "/" + file_name));
    if (path.empty()) return limit;
    const size_t slash = path.rfind('/');
    path.resize(slash == std::string::npos ? 0 : slash);
  }
}

bool Exists(const std::string& file) { return std::ifstream(file).good(); }

}  // namespace

uint64_t CgroupMemoryLimit(const std::string& proc_cgroup, const std::string& root) {
  std::ifstream in(proc_cgroup);
  uint64_t limit = UINT64_MAX;
  for (std::string line; std::getline(in, line);) {
    // "ID:CONTROLLERS:PATH"; PATH may itself hold ':'.
    const size_t a = line.find(':');
    const size_t b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1);
    std::string path = line.substr(b + 1);
    if (path == "/") path.clear();
    if (controllers.empty()) {  // v2: mounted at ROOT, or at ROOT/unified beside v1
      for (const std::string& dir : {root, root + "/unified"}) {
        if (Exists(dir + "/cgroup.controllers")) {
          limit = std::min(limit, SmallestUpward(dir, path, "memory.max"));
          break;
        }
      }
      continue;
    }
    std::stringstream list(controllers);
    for (std::string c; std::getline(list, c, ',');) {
      if (c == "memory") {
        limit = std::min(limit, SmallestUpward(root + "/memory", path, "memory.limit_in_bytes"));
      }
    }
  }
  return limit;
}

}  // namespace clairfs::pack
