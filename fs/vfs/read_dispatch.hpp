// DispatchRead: how a READ is answered, apart from FUSE (the adapter's Read
// handler is this with fuse_reply_* as `reply`; docs/fuse.md, "The request
// path").
//
// The calling thread - the one that read the request - answers at once when
// the bytes need no wait (Vfs::ReadIfReady: in the RAM cache, a control file,
// an error); otherwise the READ goes to `pool` and a pool thread answers it
// once the pack, the decoder or the peer has answered, success or not. When
// the pool's queue is full (or there is no pool) the calling thread answers
// it itself: back-pressure rather than an unbounded queue.
//
// `reply` runs exactly once per call, unless the pool is stopped with the
// READ still queued (Stop(false) at unmount drops it; the kernel fails the
// request when the device closes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

#include "base/work_pool.hpp"
#include "fs/vfs/vfs.hpp"

namespace clairfs::fs {

// `reply` is called with a const Result<ReadData>& and must be copyable.
template <class Reply>
void DispatchRead(Vfs* vfs, WorkPool* pool, uint64_t ino, uint64_t offset, size_t size,
                  Reply reply) {
  if (auto ready = vfs->ReadIfReady(ino, offset, size)) {
    reply(*ready);
    return;
  }
  auto answer = [vfs, ino, offset, size, reply]() { reply(vfs->Read(ino, offset, size)); };
  if (pool == nullptr || !pool->TrySubmit(answer)) answer();
}

}  // namespace clairfs::fs
