// Scanning a source tree into the breadth-first node list a manifest needs.
//
// Symlinks are followed when their target stays inside the source tree (the
// target's content is stored under the link's name); links that escape the
// tree, dangle or loop are errors, all of them reported together. Special
// files (fifos, sockets, devices) are skipped with a warning.
// ScanTree is a pure function of the file system; thread-compatible.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.hpp"

namespace clairfs::pack {

struct ScanEntry {
  std::string name;     // the last path component; empty for the root
  std::string source;   // path to read the content from (links already followed)
  uint32_t parent = 0;  // index of the parent entry; the root is its own parent
  bool is_dir = false;
  uint64_t size = 0;  // files only
  uint32_t mode = 0;  // st_mode of the target, type bits included
  int64_t mtime_ns = 0;
  uint32_t first_child = 0;  // directories: children are [first_child, first_child + child_count)
  uint32_t child_count = 0;
};

struct ScanResult {
  std::vector<ScanEntry> entries;     // breadth-first, children sorted bytewise; [0] is the root
  std::vector<std::string> warnings;  // skipped special files, awkward names
  uint64_t file_count = 0;
  uint64_t total_bytes = 0;
};

// What to do with a symlink whose target is outside the tree, or missing.
enum class ExternalLinks {
  kRefuse,  // an error (default): the pack would depend on files outside SRC
  kSkip,    // left out, with a warning
  kFollow,  // stored as the target's content, like `cp -rL` (missing targets still refused)
};

// Scans `root`. Every problem that makes the tree unpackable (unreadable
// directory, escaping or looping link) is collected; if there are any the
// result is an error listing them.
Result<ScanResult> ScanTree(const std::string& root,
                            ExternalLinks external = ExternalLinks::kRefuse);

// "refuse", "skip" or "follow".
Result<ExternalLinks> ParseExternalLinks(const std::string& name);

// The path of entry i relative to the root ("" for the root).
std::string EntryPath(const std::vector<ScanEntry>& entries, uint32_t i);

// A printable form of a name or path: bytes that are not valid UTF-8 and
// control characters are shown as \xNN.
std::string Printable(const std::string& s);

}  // namespace clairfs::pack
