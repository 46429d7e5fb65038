// Hooks that let a prefetcher see the daemon's opens and reach the kernel's
// page cache without fs/vfs depending on fs/engine or on libfuse.
//
// OpenObserver: Vfs::Open calls OnOpen(node) for every dataset file (never
// for directories or control files) before it replies, on the FUSE worker
// thread; an implementation may wait, but only for a bounded time.
// Vfs::ReadDir calls OnListed(first, end) with the nodes of the entries it
// handed out (children of one directory are consecutive nodes) before the
// reply is sent: with READDIRPLUS the kernel makes inodes of them once it has
// the reply, so pushes it refused until then may succeed a little later.
// Vfs::Read calls OnReadWait for a READ that had to wait for its bytes, and
// Vfs::Forget calls OnForget for a dataset file's inode the kernel let go. All
// run on FUSE worker threads and must be thread-safe and quick.
//
// PageCachePusher: hands decoded bytes of a file to the kernel's page cache
// (fs/fuse implements it with fuse_lowlevel_notify_store). Push returns
// NotFound when the kernel does not know the inode yet (no lookup so far, or
// no session attached), another error when the kernel refused the bytes.
// Must be thread-safe.
#pragma once

#include <cstdint>

#include "base/status.hpp"
#include "fs/vfs/file_reader.hpp"

namespace clairfs::fs {

class OpenObserver {
 public:
  virtual ~OpenObserver() = default;
  // `node` is the manifest node index of the opened file (inode - 1).
  virtual void OnOpen(uint32_t node) = 0;
  // Nodes [first, end) were listed to the kernel.
  virtual void OnListed(uint32_t first, uint32_t end) {
    (void)first;
    (void)end;
  }
  // A READ of file `node` that the RAM cache could not answer at once (a load
  // from the packs or a peer, or a wait for a load under way) took `ns`:
  // called after the load, before the reply.
  virtual void OnReadWait(uint32_t node, uint64_t ns) {
    (void)node;
    (void)ns;
  }
  // The kernel forgot file `node`'s inode (FORGET): its page cache is gone.
  virtual void OnForget(uint32_t node) { (void)node; }
};

class PageCachePusher {
 public:
  virtual ~PageCachePusher() = default;
  // Stores `data` (the file's bytes from `offset`) in the page cache of inode `ino`.
  virtual Status Push(uint64_t ino, uint64_t offset, const ReadData& data) = 0;
};

}  // namespace clairfs::fs
