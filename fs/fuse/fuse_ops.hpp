// Internal to fs/fuse: the per-session state the handlers reach through
// fuse_req_userdata, and the table of low-level handlers. Only fs/fuse
// includes this header (and with it <fuse_lowlevel.h>).
#pragma once

#ifndef FUSE_USE_VERSION
#define FUSE_USE_VERSION 314
#endif
#include <fuse_lowlevel.h>

#include <atomic>

#include "fs/core/config.hpp"
#include "fs/vfs/vfs.hpp"

namespace clairfs::fs {

// Shared by every worker thread: vfs and config are read-only after start.
struct Session {
  Vfs* vfs;
  Config config;
  std::atomic<bool> initialized{false};  // set by Init, read by the read-ahead tuner
};

// Every handler unpacks its arguments, makes one Vfs call and ends in exactly
// one fuse_reply_*; writes of any kind are EROFS.
fuse_lowlevel_ops MakeOps();

}  // namespace clairfs::fs
