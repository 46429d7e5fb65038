// FusePageCachePusher: the PageCachePusher of a live FUSE session - puts a
// file's bytes into the kernel's page cache with fuse_lowlevel_notify_store,
// so the application reads them without a READ request.
//
// ServeFuse attaches the session once it is mounted and detaches it before
// the session is destroyed. Push answers NotFound when the kernel does not
// know the inode (no lookup or readdirplus has shown it yet, or it was
// forgotten), and so also when no session is attached: before the mount no
// inode is known, and the caller keeps the bytes for a later try.
//
// Thread-safe: pushes share a reader lock; Attach/Detach take it exclusively,
// so no push uses a session being destroyed. This header does not include
// <fuse_lowlevel.h>.
#pragma once

#include "base/mutex.hpp"
#include "fs/vfs/open_observer.hpp"

struct fuse_session;

namespace clairfs::fs {

class FusePageCachePusher final : public PageCachePusher {
 public:
  Status Push(uint64_t ino, uint64_t offset, const ReadData& data) override;
  void Attach(fuse_session* session);
  void Detach() { Attach(nullptr); }

 private:
  SharedMutex mu_;
  fuse_session* session_ CLAIRFS_GUARDED_BY(mu_) = nullptr;
};

}  // namespace clairfs::fs
