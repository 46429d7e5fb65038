#include "fs/fuse/fuse_page_cache_pusher.hpp"

#include <vector>

#include "fs/fuse/fuse_ops.hpp"

namespace clairfs::fs {

void FusePageCachePusher::Attach(fuse_session* session) {
  WriterLock lock(&mu_);
  session_ = session;
}

Status FusePageCachePusher::Push(uint64_t ino, uint64_t offset, const ReadData& data) {
  if (data.slices.empty()) return Status::Ok();
  // fuse_bufvec ends in a one-element array: room for every slice after it.
  std::vector<char> storage(sizeof(fuse_bufvec) + (data.slices.size() - 1) * sizeof(fuse_buf));
  auto* bufv = reinterpret_cast<fuse_bufvec*>(storage.data());
  bufv->idx = 0;
  bufv->off = 0;
  bufv->count = data.slices.size();
  for (size_t i = 0; i < data.slices.size(); ++i) {
    fuse_buf& b = bufv->buf[i];
    b = fuse_buf{};
    b.size = data.slices[i].size;
    b.mem = const_cast<char*>(data.slices[i].data);
    b.fd = -1;
  }
  ReaderLock lock(&mu_);
  if (session_ == nullptr) return Status::NotFound("no FUSE session yet");
  const int rc = fuse_lowlevel_notify_store(session_, ino, static_cast<off_t>(offset), bufv,
                                            static_cast<fuse_buf_copy_flags>(0));
  // ENOSYS: the kernel's INIT has not been answered yet, so no inode is known.
  if (rc == -ENOENT || rc == -ENOSYS) {
    return Status::NotFound("inode " + std::to_string(ino) + " not known");
  }
  if (rc < 0) return Status::FromErrno(-rc, "notify_store of inode " + std::to_string(ino));
  return Status::Ok();
}

}  // namespace clairfs::fs
