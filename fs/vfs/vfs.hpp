// Vfs: the file system without FUSE: the read-only dataset, and beside it
// the writable area when one is configured (VfsOptions::writes). The
// namespace comes from the manifest (inode = node index + 1, the root is 1),
// file bytes from a FileReader, the control files under /.clairfs (inodes
// after the manifest's), and the area's inodes after those. Every call
// returns a value or a Status whose err() is the errno for the kernel:
// ENOENT, ENOTDIR, EISDIR, EROFS, EIO. It counts the requests that reach it
// and, by source, the READs it answered with bytes (Stats).
//
// Thread-safe: the manifest is immutable and the parts it calls are
// thread-safe. The FUSE adapter (fs/fuse) is a thin shell over this class.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fs/cache/ram_cache.hpp"
#include "fs/stats/stats.hpp"
#include "fs/store/payload_source.hpp"
#include "fs/vfs/attr.hpp"
#include "fs/vfs/control_files.hpp"
#include "fs/vfs/file_reader.hpp"
#include "fs/vfs/open_observer.hpp"
#include "fs/vfs/write_area.hpp"
#include "partitioner/format/manifest.hpp"

namespace clairfs::fs {

struct VfsOptions {
  uint32_t uid = 0, gid = 0;  // owner reported for every inode
  std::string config_text;    // content of /.clairfs/config
  // Content of /.clairfs/report (docs/report.md: "clairfs-report 1\nsocket @NAME\n");
  // empty: there is no such file.
  std::string report_text;
  // Decline the first OPEN with ENOSYS (config no_open): the kernel then opens
  // dataset files by itself with keep_cache, so a warm open/read/close costs
  // no daemon round trip.
  bool decline_open = true;
  // The same for directories (config no_opendir). Off by default: fusermount3's
  // auto_unmount tells a dead daemon from a live one by opening the mount
  // root, which must then reach the daemon (declined, a killed daemon leaves a
  // dead mount). Listings are cached by the kernel either way.
  bool decline_opendir = false;
  // More top-level members of stats.json, each an object whose members the
  // section writes, per snapshot (from a request thread: must be thread-safe).
  std::vector<std::pair<std::string, StatsSection>> stats_sections;
  // Told of every dataset-file open (not owned; null = nobody). Only opens the
  // daemon answers are seen: set decline_open false when it matters, or have
  // an OpenWatcher report them and call DeclineOpens once it runs.
  OpenObserver* open_observer = nullptr;
  // The writable area, a directory of the mount's root (not owned; null =
  // none: the mount is read-only). Its name must not be the dataset's.
  WriteArea* writes = nullptr;
};

class Vfs {
 public:
  Vfs(std::shared_ptr<const format::Manifest> manifest, PayloadSource* source, RamCache* cache,
      Stats* stats, VfsOptions options);

  Result<Attr> Lookup(uint64_t parent, std::string_view name);
  Result<Attr> GetAttr(uint64_t ino);
  // Directories only; ENOTDIR otherwise.
  Result<OpenReply> OpenDir(uint64_t ino);
  // Entries after `offset` (0 = from the start: ".", "..", then the children).
  // `plus`: each entry emitted counts as a lookup of it (READDIRPLUS).
  Status ReadDir(uint64_t ino, uint64_t offset, const DirEmit& emit, bool plus = false);
  // Files only: EISDIR for a directory; a dataset file: EROFS for any access
  // mode but O_RDONLY.
  Result<OpenReply> Open(uint64_t ino, int flags);
  // The kernel forgets `count` lookups of `ino` (only the area's inodes care).
  void Forget(uint64_t ino, uint64_t count);

  // Changes: the writable area's (WriteArea); anywhere else EROFS (EXDEV for
  // a rename between the dataset and the area).
  Result<Attr> SetAttr(uint64_t ino, const AttrChange& change);
  Result<Attr> Mkdir(uint64_t parent, std::string_view name, uint32_t mode);
  Result<Attr> Create(uint64_t parent, std::string_view name, uint32_t mode);
  Status Unlink(uint64_t parent, std::string_view name);
  Status Rmdir(uint64_t parent, std::string_view name);
  Status Rename(uint64_t parent, std::string_view name, uint64_t new_parent,
                std::string_view new_name, unsigned flags);
  Result<size_t> Write(uint64_t ino, uint64_t offset, const char* data, size_t size);
  Status Fsync(uint64_t ino);
  // What a call the area does not support answers under `ino` (symlink,
  // link, xattrs, fallocate): EPERM or `area_err` in the area, EROFS elsewhere.
  Status Unsupported(uint64_t ino, int area_err) const;
  Result<ReadData> Read(uint64_t ino, uint64_t offset, size_t size);
  // Read's answer when it needs no wait: errors, control files, and dataset
  // bytes already in the RAM cache. Nothing when a block must be loaded (from
  // a pack, decoded, or asked of a peer): then call Read, where waiting is fine.
  std::optional<Result<ReadData>> ReadIfReady(uint64_t ino, uint64_t offset, size_t size);
  FsStat StatFs() const;

  uint64_t root_ino() const { return 1; }
  // Whether `ino` is the writable area's (whose names the kernel must not cache).
  bool InArea(uint64_t ino) const { return writes_ != nullptr && writes_->Owns(ino); }
  // The first inode number after the dataset's and the control files': the
  // writable area's root.
  static uint64_t FirstFreeIno(const format::Manifest& manifest);
  const format::Manifest& manifest() const { return *manifest_; }
  const ControlFiles& control() const { return control_; }
  Stats* stats() const { return stats_; }
  // From now on opens are declined (see OpenReply::decline); the kernel stops
  // sending them after the first one. Any thread, any time.
  void DeclineOpens() { decline_open_.store(true, std::memory_order_relaxed); }

 private:
  bool IsNode(uint64_t ino) const { return ino >= 1 && ino <= manifest_->node_count(); }
  Attr NodeAttr(uint32_t node) const;
  Attr ControlAttr(ControlFiles::Index i, bool refresh);
  Status ReadControlDir(uint64_t offset, const DirEmit& emit);
  Status CheckDir(uint64_t ino) const;
  // Counts a READ of a dataset file answered with `data`, by its source.
  void CountAnswered(const ReadData& data);

  const std::shared_ptr<const format::Manifest> manifest_;
  Stats* const stats_;
  RamCache* const cache_;
  VfsOptions options_;  // open_observer set once before serving, then read-only
  std::atomic<bool> decline_open_;
  WriteArea* const writes_;  // not owned; null: read-only
  FileReader reader_;
  ControlFiles control_;
  std::vector<uint32_t> subdirs_;  // per node: child directories (for nlink)
};

}  // namespace clairfs::fs
