// Hooks that let a prefetcher see the daemon's opens and reach the kernel's
// page cache without fs/vfs depending on fs/prefetch or on libfuse.
//
// OpenObserver: Vfs::Open calls OnOpen(node) for every dataset file (never
// for directories or control files) before it replies, on the FUSE worker
// thread; an implementation may wait, but only for a bounded time. Must be
// thread-safe.
//
// PageCachePusher: hands decoded bytes of a file to the kernel's page cache
// (fs/fuse implements it with fuse_lowlevel_notify_store). Push returns
// NotFound when the kernel does not know the inode yet (no lookup so far),
// Unavailable-like IOError when no session is attached. Must be thread-safe.
#pragma once

#include <cstdint>

#include "fs/vfs/file_reader.hpp"
#include "partitioner/format/status.hpp"

namespace clairfs::fs {

class OpenObserver {
 public:
  virtual ~OpenObserver() = default;
  // `node` is the manifest node index of the opened file (inode - 1).
  virtual void OnOpen(uint32_t node) = 0;
};

class PageCachePusher {
 public:
  virtual ~PageCachePusher() = default;
  // Stores `data` (the file's bytes from `offset`) in the page cache of inode `ino`.
  virtual Status Push(uint64_t ino, uint64_t offset, const ReadData& data) = 0;
};

}  // namespace clairfs::fs
