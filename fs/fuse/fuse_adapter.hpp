// The FUSE adapter: serves a Vfs through libfuse 3.14's low-level API.
//
// Each handler unpacks its arguments, makes one call into the Vfs and ends in
// exactly one fuse_reply_*; the Vfs reaches the handlers as session userdata,
// there is no global file-system object. This is the only file set that
// includes <fuse_lowlevel.h>.
//
// The mount is read-only (`ro`, so the kernel itself answers EROFS to write
// opens, creates, renames, ...; the handlers answer EROFS as well),
// default_permissions, auto_unmount (a dead daemon releases the mount point).
// No FLUSH, FSYNC or ACCESS handler: libfuse answers ENOSYS once and the
// kernel stops asking, which takes a round trip off every close().
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "base/status.hpp"
#include "fs/fuse/fuse_page_cache_pusher.hpp"
#include "fs/vfs/vfs.hpp"

namespace clairfs::fs {

// What the FUSE adapter runs with (clairfsd's assembly fills it from the
// config keys of the same names; docs/fuse.md).
// The FUSE session's settings (config keys mount, fuse_threads, fuse_spin_us,
// threads, clone_fd, allow_other, *_timeout, read_ahead).
struct FuseOptions {
  std::string mount;         // where to mount (required; created if missing, must be empty)
  std::string dataset;       // shown as the mount's source (fsname); the caller sets it
  bool allow_other = false;  // let other users in (non-root needs user_allow_other)
  bool writable = false;     // mounted rw (a writable area); the caller sets it
  // Threads reading /dev/fuse; each answers at once what needs no wait
  // (lookups, attributes, listings, ioctls, READs of bytes in RAM).
  uint32_t fuse_threads = 1;
  // With one reading thread: how long it keeps looking for the next request
  // before it sleeps, in microseconds (adapted to the gaps, SpinWindow). A
  // request that finds it awake skips the wake-up of a sleeping CPU (tens of
  // microseconds on a VM), at the cost of that CPU time. 0 = sleep at once.
  uint32_t spin_us = 200;
  uint32_t threads = 10;               // threads answering READs that wait (packs, peers)
  bool clone_fd = true;                // one /dev/fuse fd per reading thread
  double entry_timeout = 31536000;     // s the kernel may cache a name (the dataset is immutable)
  double attr_timeout = 31536000;      // s the kernel may cache attributes
  double negative_timeout = 31536000;  // s the kernel may cache "no such name"
  // Kernel read-ahead window of the mount (root only; 0 keeps the kernel's
  // 128 KiB): the largest READ request a cold sequential read produces.
  uint64_t read_ahead = uint64_t{1} << 20;
};

// Mounts `vfs` at options.mount and serves it until SIGINT, SIGTERM or SIGHUP, or until someone
// unmounts it; then unmounts. Returns an error when the session cannot be set up or mounted.
// Blocks; call once per process (it installs signal handlers). `pusher`
// (optional) is attached to the session while it is mounted. `start`
// (optional) runs in the calling thread once the mount is up, before any
// request is answered; an error from it unmounts and is returned. Start the
// daemon's own threads there, not before: mounting forks fusermount3, and a
// forked child of a multi-threaded process is only safe if no other thread
// holds an allocator lock at that moment (libfuse's child calls setenv; under
// GCC 12's AddressSanitizer a thread allocating during the fork left the child
// deadlocked and the mount never appeared). `on_mounted` (optional) runs on a
// thread of its own once the mount answers, so it may use the mount; it is
// joined once the session is gone (which fails its calls still waiting on
// the mount).
// Call first in main, before any other descriptor is opened: keeps the lowest
// free descriptor for the socket that tells fusermount3's auto-unmount helper
// the daemon is gone, so that when the daemon is killed that socket closes
// after every /dev/fuse descriptor (fuse_adapter.cpp says why).
void ReserveAutoUnmountSlot();

Status ServeFuse(Vfs* vfs, const FuseOptions& options, FusePageCachePusher* pusher = nullptr,
                 std::function<Status()> start = {}, std::function<void()> on_mounted = {});

}  // namespace clairfs::fs
