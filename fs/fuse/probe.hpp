// A trial mount: proves that this user can mount a FUSE file system here and
// learns the kernel's FUSE protocol version from its INIT (clairfs-doctor).
// Stateless; thread-compatible (it redirects this process's stderr while it
// mounts, so call it while no other thread writes there).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "base/status.hpp"

namespace clairfs::fs {

// The protocol minors (major 7) the FUSE adapter relies on, from the
// changelog of the kernel's include/uapi/linux/fuse.h.
// 7.23 adds FUSE_NO_OPEN_SUPPORT: the adapter declines OPEN with ENOSYS (config
// no_open, on by default, and once the prefetcher's inotify watches are in
// place), which an older kernel hands back to the opener as a failed open().
// It also holds everything older the adapter asks for: notify_store (7.15,
// the prefetcher's page-cache pushes), AUTO_INVAL_DATA (7.20), READDIRPLUS
// (7.21), time_gran (7.23).
inline constexpr unsigned kFuseMinorRequired = 23;
// 7.28 adds FUSE_MAX_PAGES (a READ of up to 1 MiB, which the mount's read_ahead
// of 1 MiB counts on; 128 KiB before) and FOPEN_CACHE_DIR (listings cached by
// the kernel); PARALLEL_DIROPS is 7.25. Slower without them, still correct.
inline constexpr unsigned kFuseMinorFast = 28;

struct FuseProbe {
  unsigned proto_major = 0;  // the kernel's protocol version from its INIT
  unsigned proto_minor = 0;
};

// Mounts an empty, read-only file system on `dir` (an existing empty
// directory this user may mount on; through fusermount3 when not root),
// answers the kernel's INIT, unmounts. IOError with what libfuse and
// fusermount3 printed when the mount fails; Unavailable when no INIT came
// within `limit`.
Result<FuseProbe> ProbeFuseMount(const std::string& dir, std::chrono::milliseconds limit);

}  // namespace clairfs::fs
