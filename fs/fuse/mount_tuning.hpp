// The mount point before mounting, and kernel settings of a mounted file
// system that FUSE's protocol cannot set. Stateless functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.hpp"

namespace clairfs::fs {

// Makes `mount` ready to mount on: creates it (and its parents) when missing.
// InvalidArgument naming the path when it exists but is not a directory, is
// already a mount point (a second daemon would stack on the first), or is not
// empty (the mount would hide its files); the errno's status when it cannot
// be created or read. A clairfs mount whose daemon is gone (killed before it
// could unmount, and fusermount3's auto-unmount helper did not) is detached
// first and `*detached_stale` set, so that the caller can say so; a live
// mount, or anyone else's, is never touched.
Status PrepareMountPoint(const std::string& mount, bool* detached_stale);

// Sets the read-ahead window of the mount's backing device info
// (/sys/class/bdi/MAJ:MIN/read_ahead_kb; root only). The kernel starts FUSE
// mounts at 128 KiB, which cuts every cold read into 128 KiB requests; 1 MiB
// lets one request carry up to max_pages (256 pages). Finds the device
// through /proc/self/mountinfo, so it sends no request to the file system
// (safe before the session loop runs).
Status SetMountReadAhead(const std::string& mount, uint64_t bytes);
// The current window in bytes, or 0 when it cannot be read.
uint64_t MountReadAhead(const std::string& mount);

}  // namespace clairfs::fs
