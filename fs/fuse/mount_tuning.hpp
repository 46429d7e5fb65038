// Kernel settings of a mounted file system that FUSE's protocol cannot set.
// Stateless functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "partitioner/format/status.hpp"

namespace clairfs::fs {

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
