// The values the namespace hands the FUSE adapter: attributes, open replies,
// statfs figures, directory entries. Shared by the dataset's namespace (Vfs)
// and the writable area (WriteArea).
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>

namespace clairfs::fs {

struct Attr {
  uint64_t ino = 0;
  uint32_t mode = 0;  // with the type bits
  uint32_t nlink = 1;
  uint32_t uid = 0, gid = 0;
  uint64_t size = 0;
  int64_t mtime_ns = 0;   // also reported as atime and ctime
  bool cacheable = true;  // false: the kernel must not cache name or attributes
};

struct OpenReply {
  bool direct_io = false;  // bypass the page cache (control files)
  bool keep_cache = true;  // keep pages cached across opens (dataset files)
  // Answer ENOSYS: the kernel then opens every file (or directory) of the
  // mount by itself, with keep_cache, and never sends OPEN (OPENDIR) again.
  bool decline = false;
  bool cache_listing = true;  // directories: the kernel may keep the listing
};

struct FsStat {
  uint64_t block_size = 4096, blocks = 0, files = 0;
  uint64_t blocks_free = 0, blocks_available = 0, files_free = 0;
  uint32_t name_max = 255;
  bool read_only = true;
};

// What a SETATTR changes (each part only when its flag is set).
struct AttrChange {
  bool mode = false, size = false, mtime = false, uid = false, gid = false;
  uint32_t new_mode = 0;
  uint64_t new_size = 0;
  int64_t new_mtime_ns = 0;
  uint32_t new_uid = 0, new_gid = 0;
};

// One directory entry for ReadDir's callback; return false when the reply
// buffer is full (the entry is then offered again on the next call).
using DirEmit = std::function<bool(std::string_view name, const Attr& attr, uint64_t next_off)>;

}  // namespace clairfs::fs
