// Internal to fs/fuse: the per-session state the handlers reach through
// fuse_req_userdata, and the table of low-level handlers. Only fs/fuse
// includes this header (and with it <fuse_lowlevel.h>).
#pragma once

#ifndef FUSE_USE_VERSION
#define FUSE_USE_VERSION 314
#endif
#include <fuse_lowlevel.h>

#include <atomic>

#include "base/work_pool.hpp"
#include "fs/fuse/fuse_adapter.hpp"
#include "fs/vfs/vfs.hpp"

namespace clairfs::fs {

// Shared by every thread: vfs and options are read-only after start.
struct Session {
  Vfs* vfs;
  FuseOptions options;
  // Where READs that must wait go (null: answered where they were read).
  WorkPool* waiting_reads = nullptr;
  std::atomic<bool> initialized{false};  // set by Init, read by the read-ahead tuner
};

// Every handler unpacks its arguments, makes one Vfs call and ends in exactly
// one fuse_reply_*; changes are the Vfs's to refuse (EROFS outside the
// writable area). Every request is answered by
// the thread that read it from /dev/fuse, except a READ whose bytes are not in
// RAM yet, and an fsync (it waits for the writable area's drain): those are
// answered by a thread of `waiting_reads` (or by the reading thread when that
// pool's queue is full).
fuse_lowlevel_ops MakeOps();

}  // namespace clairfs::fs
