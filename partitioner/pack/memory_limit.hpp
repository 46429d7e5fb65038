// The memory this process may use under its control group: the smallest limit
// of its cgroup and every cgroup above it, v2 (memory.max) or v1 (the memory
// controller's memory.limit_in_bytes). Stateless; thread-safe.
#pragma once

#include <cstdint>
#include <string>

namespace clairfs::pack {

// UINT64_MAX when there is no limit or none can be read. `proc_cgroup` is the
// process's /proc/PID/cgroup, `root` where the cgroup file systems are mounted
// (v2 at ROOT or ROOT/unified, v1's memory controller at ROOT/memory).
uint64_t CgroupMemoryLimit(const std::string& proc_cgroup = "/proc/self/cgroup",
                           const std::string& root = "/sys/fs/cgroup");

}  // namespace clairfs::pack
