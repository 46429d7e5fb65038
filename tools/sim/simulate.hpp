// One simulated job per policy, as clairfs-sim runs it: the dataset's file
// sizes, the order (the config's generator, tools/sim/job_order.hpp), a fresh
// clock and shared file system per policy. Thread-safe (no shared state).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.hpp"
#include "tools/sim/job.hpp"
#include "tools/sim/sim_config.hpp"

namespace clairfs::sim {

struct PolicyRun {
  std::string policy;
  std::vector<EpochResult> epochs;
  double staging_seconds = 0;            // FanStore: until every partition was copied
  uint32_t peak_shared_fs_requests = 0;  // most requests on the shared file system at once
  uint64_t shared_fs_bytes = 0;          // read from it in all, staging included
};

// The size of every file of the config's dataset (deterministic in its seed).
std::vector<uint64_t> DatasetSizes(const SimConfig& config);

Result<PolicyRun> RunPolicy(const SimConfig& config, const std::string& policy,
                            const std::vector<uint64_t>& file_bytes, const EpochFn& on_epoch = {});

}  // namespace clairfs::sim
