#include "partitioner/pack/scan.hpp"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <deque>

namespace clairfs::pack {
namespace {

constexpr size_t kMaxErrorsShown = 20;

int64_t MtimeNs(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

// Length of the valid UTF-8 sequence at s[i], or 0 if there is none.
size_t Utf8Length(const std::string& s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
  if (len == 0 || i + len > s.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return 0;
  }
  return len;
}

bool IsPrintableUtf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    size_t len = Utf8Length(s, i);
    if (len == 0 || (len == 1 && (static_cast<unsigned char>(s[i]) < 0x20 || s[i] == 0x7f))) {
      return false;
    }
    i += len;
  }
  return true;
}

std::string RealPath(const std::string& path, int* err) {
  char buf[PATH_MAX];
  if (::realpath(path.c_str(), buf) == nullptr) {
    *err = errno;
    return {};
  }
  *err = 0;
  return buf;
}

bool IsWithin(const std::string& path, const std::string& root) {
  return path == root || (path.size() > root.size() && path.compare(0, root.size(), root) == 0 &&
                          (root == "/" || path[root.size()] == '/'));
}

class Scanner {
 public:
  Scanner(std::string root, ExternalLinks external) : root_(std::move(root)), external_(external) {}

  Result<ScanResult> Run() {
    int err;
    real_root_ = RealPath(root_, &err);
    if (real_root_.empty()) return Status::FromErrno(err, "source " + root_);
    struct stat st;
    if (::stat(real_root_.c_str(), &st) != 0) return Status::FromErrno(errno, "stat " + root_);
    if (!S_ISDIR(st.st_mode)) return Status::InvalidArgument(root_ + ": not a directory");
    ScanEntry root;
    root.source = root_;
    root.is_dir = true;
    root.mode = st.st_mode;
    root.mtime_ns = MtimeNs(st);
    out_.entries.push_back(root);
    // Breadth-first: directories are expanded in the order they were added.
    for (uint32_t i = 0; i < out_.entries.size(); ++i) {
      if (out_.entries[i].is_dir) Expand(i);
    }
    if (!errors_.empty()) {
      std::string msg = "cannot pack " + root_ + ":";
      for (size_t k = 0; k < errors_.size() && k < kMaxErrorsShown; ++k) msg += "\n  " + errors_[k];
      if (errors_.size() > kMaxErrorsShown) {
        msg += "\n  ... and " + std::to_string(errors_.size() - kMaxErrorsShown) + " more";
      }
      return Status::InvalidArgument(msg);
    }
    return std::move(out_);
  }

 private:
  void Expand(uint32_t dir) {
    const std::string dir_source = out_.entries[dir].source;
    const std::string dir_path = EntryPath(out_.entries, dir);
    DIR* d = ::opendir(dir_source.c_str());
    out_.entries[dir].first_child = static_cast<uint32_t>(out_.entries.size());
    if (d == nullptr) {
      errors_.push_back(Printable(Shown(dir_path)) +
                        ": cannot list directory: " + std::strerror(errno));
      return;
    }
    std::vector<std::string> names;
    while (struct dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") names.push_back(std::move(n));
    }
    ::closedir(d);
    std::sort(names.begin(), names.end());
    uint32_t kept = 0;
    for (const std::string& name : names) {
      if (AddChild(dir, dir_source, dir_path, name)) ++kept;
    }
    out_.entries[dir].child_count = kept;
  }

  std::string Shown(const std::string& rel) const { return rel.empty() ? "." : rel; }

  bool AddChild(uint32_t dir, const std::string& dir_source, const std::string& dir_path,
                const std::string& name) {
    const std::string source = dir_source + "/" + name;
    const std::string rel = dir_path.empty() ? name : dir_path + "/" + name;
    struct stat st;
    if (::lstat(source.c_str(), &st) != 0) {
      errors_.push_back(Printable(rel) + ": " + std::strerror(errno));
      return false;
    }
    if (S_ISLNK(st.st_mode) && !FollowLink(dir, source, rel, &st)) return false;
    if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
      out_.warnings.push_back(Printable(rel) + ": not a regular file or directory, skipped");
      return false;
    }
    if (!IsPrintableUtf8(name)) {
      out_.warnings.push_back(Printable(rel) +
                              ": name is not printable UTF-8 (kept as is; line-based order files "
                              "and JSON output cannot show it exactly)");
    }
    if (S_ISREG(st.st_mode) && ::access(source.c_str(), R_OK) != 0) {
      errors_.push_back(Printable(rel) + ": unreadable: " + std::strerror(errno));
      return false;
    }
    ScanEntry e;
    e.name = name;
    e.source = source;
    e.parent = dir;
    e.is_dir = S_ISDIR(st.st_mode);
    e.size = e.is_dir ? 0 : static_cast<uint64_t>(st.st_size);
    e.mode = st.st_mode;
    e.mtime_ns = MtimeNs(st);
    if (!e.is_dir) {
      ++out_.file_count;
      out_.total_bytes += e.size;
    }
    out_.entries.push_back(std::move(e));
    return true;
  }

  // Replaces *st with the link target's stat if the link may be followed.
  bool FollowLink(uint32_t dir, const std::string& source, const std::string& rel,
                  struct stat* st) {
    int err;
    std::string target = RealPath(source, &err);
    if (target.empty()) {
      if (err != ELOOP && external_ == ExternalLinks::kSkip) {
        out_.warnings.push_back(Printable(rel) + ": broken symlink skipped");
        return false;
      }
      errors_.push_back(Printable(rel) + ": symlink " +
                        (err == ELOOP ? "loops" : std::string("is broken: ") + std::strerror(err)));
      return false;
    }
    if (!IsWithin(target, real_root_)) {
      if (external_ == ExternalLinks::kSkip) {
        out_.warnings.push_back(Printable(rel) + ": symlink to " + Printable(target) +
                                " outside the source tree skipped");
        return false;
      }
      if (external_ == ExternalLinks::kRefuse) {
        errors_.push_back(Printable(rel) + ": symlink escapes the source tree (to " +
                          Printable(target) + "; see --external-links)");
        return false;
      }
    }
    if (::stat(target.c_str(), st) != 0) {
      errors_.push_back(Printable(rel) + ": " + std::strerror(errno));
      return false;
    }
    if (S_ISDIR(st->st_mode)) {
      // Following a link to a directory already on the walk from the root to
      // here (directly or through other links) would never end.
      for (uint32_t a = dir;; a = out_.entries[a].parent) {
        if (RealPath(out_.entries[a].source, &err) == target) {
          errors_.push_back(Printable(rel) + ": symlink loops (points to an enclosing directory)");
          return false;
        }
        if (a == 0) break;
      }
    }
    return true;
  }

  std::string root_;
  ExternalLinks external_;
  std::string real_root_;
  ScanResult out_;
  std::vector<std::string> errors_;
};

}  // namespace

Result<ScanResult> ScanTree(const std::string& root, ExternalLinks external) {
  return Scanner(root, external).Run();
}

Result<ExternalLinks> ParseExternalLinks(const std::string& name) {
  if (name == "refuse") return ExternalLinks::kRefuse;
  if (name == "skip") return ExternalLinks::kSkip;
  if (name == "follow") return ExternalLinks::kFollow;
  return Status::InvalidArgument("bad --external-links '" + name +
                                 "' (expected refuse, skip or follow)");
}

std::string EntryPath(const std::vector<ScanEntry>& entries, uint32_t i) {
  std::vector<const std::string*> parts;
  while (i != 0) {
    parts.push_back(&entries[i].name);
    i = entries[i].parent;
  }
  std::string out;
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
    if (!out.empty()) out += '/';
    out += **it;
  }
  return out;
}

std::string Printable(const std::string& s) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < s.size();) {
    size_t len = Utf8Length(s, i);
    const auto c = static_cast<unsigned char>(s[i]);
    if (len == 0 || (len == 1 && (c < 0x20 || c == 0x7f || c == '\\'))) {
      if (c == '\\' && len == 1) {
        out += "\\\\";
      } else {
        out += "\\x";
        out += kHex[c >> 4];
        out += kHex[c & 15];
      }
      ++i;
    } else {
      out.append(s, i, len);
      i += len;
    }
  }
  return out;
}

}  // namespace clairfs::pack
