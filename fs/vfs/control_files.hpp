// The control files under MNT/.clairfs/: stats.json, config, and report (the
// order reporters' channel, docs/report.md; absent when its text is empty).
//
// Their content changes while mounted, so the kernel must not keep it: each
// name lookup takes a fresh snapshot whose mtime is newer than the last one
// (the kernel drops cached pages when a file's mtime changes), getattr reports
// the current snapshot, and reads are served from it. Lookups, attributes and
// entries of these files are never cached by the kernel (timeout 0).
//
// Thread-safe: mu_ guards the snapshots (a leaf lock, held for a pointer swap).
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>

#include "base/mutex.hpp"
#include "fs/cache/block.hpp"

namespace clairfs::fs {

class ControlFiles {
 public:
  static constexpr const char* kDirName = ".clairfs";
  enum Index { kDir = 0, kStats = 1, kConfig = 2, kReport = 3, kCount = 4 };

  // Inode numbers start at `first_ino` (beyond the manifest's).
  // An empty `report_text` leaves the report file out.
  ControlFiles(uint64_t first_ino, std::function<std::string()> stats_text, std::string config_text,
               std::string report_text = {});

  bool Owns(uint64_t ino) const { return ino >= first_ino_ && ino < first_ino_ + kCount; }
  // False for the report file when it has no text.
  bool Present(Index i) const { return i != kReport || !report_text_.empty(); }
  uint64_t ino(Index i) const { return first_ino_ + i; }
  Index IndexOf(uint64_t ino) const { return static_cast<Index>(ino - first_ino_); }
  // "stats.json" -> kStats; kCount when there is no such file (or it is absent).
  Index FileNamed(std::string_view name) const;
  static const char* Name(Index i);

  // Takes a new snapshot of file `i` (not kDir) and returns it.
  BlockRef Refresh(Index i, int64_t* mtime_ns);
  // The current snapshot (taking the first one if there is none yet).
  BlockRef Current(Index i, int64_t* mtime_ns);
  int64_t start_ns() const { return start_ns_; }

 private:
  BlockRef Generate(Index i) const;

  const uint64_t first_ino_;
  const std::function<std::string()> stats_text_;
  const std::string config_text_;
  const std::string report_text_;
  const int64_t start_ns_;
  Mutex mu_;
  BlockRef snapshot_[kCount] CLAIRFS_GUARDED_BY(mu_);
  int64_t mtime_ns_[kCount] CLAIRFS_GUARDED_BY(mu_) = {};
  int64_t last_mtime_ns_ CLAIRFS_GUARDED_BY(mu_) = 0;
};

}  // namespace clairfs::fs
