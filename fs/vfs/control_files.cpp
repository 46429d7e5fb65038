#include "fs/vfs/control_files.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>

namespace clairfs::fs {
namespace {

int64_t WallNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

ControlFiles::ControlFiles(uint64_t first_ino, std::function<std::string()> stats_text,
                           std::string config_text, std::string report_text)
    : first_ino_(first_ino),
      stats_text_(std::move(stats_text)),
      config_text_(std::move(config_text)),
      report_text_(std::move(report_text)),
      start_ns_(WallNs()) {}

const char* ControlFiles::Name(Index i) {
  switch (i) {
    case kStats:
      return "stats.json";
    case kConfig:
      return "config";
    case kReport:
      return "report";
    default:
      return kDirName;
  }
}

ControlFiles::Index ControlFiles::FileNamed(std::string_view name) const {
  if (name == Name(kStats)) return kStats;
  if (name == Name(kConfig)) return kConfig;
  if (name == Name(kReport) && Present(kReport)) return kReport;
  return kCount;
}

BlockRef ControlFiles::Generate(Index i) const {
  const std::string text = i == kStats ? stats_text_() : i == kReport ? report_text_ : config_text_;
  auto block = std::make_shared<Block>(text.size());
  std::memcpy(block->data.get(), text.data(), text.size());
  return block;
}

BlockRef ControlFiles::Refresh(Index i, int64_t* mtime_ns) {
  BlockRef fresh = Generate(i);  // outside the lock: stats_text_ takes the cache's lock
  MutexLock lock(&mu_);
  last_mtime_ns_ = std::max(WallNs(), last_mtime_ns_ + 1);  // strictly newer, always
  snapshot_[i] = std::move(fresh);
  mtime_ns_[i] = last_mtime_ns_;
  *mtime_ns = mtime_ns_[i];
  return snapshot_[i];
}

BlockRef ControlFiles::Current(Index i, int64_t* mtime_ns) {
  {
    MutexLock lock(&mu_);
    if (snapshot_[i]) {
      *mtime_ns = mtime_ns_[i];
      return snapshot_[i];
    }
  }
  return Refresh(i, mtime_ns);
}

}  // namespace clairfs::fs
