// SimConfig: what clairfs-sim simulates, read from a YAML file
// (docs/simulation.md lists every key). Sizes are written as in the daemon's
// config ("100M", "4G": powers of 1024); bandwidths are such sizes per second.
// Value type; the loader is thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.hpp"
#include "tools/sim/fanstore_source.hpp"
#include "tools/sim/job.hpp"
#include "tools/sim/shared_device.hpp"

namespace clairfs::sim {

struct SimConfig {
  JobSpec job;
  // The dataset: `files` files of `file_size` bytes each, or normally
  // distributed around it (at least 1 byte) when file_size_stdev > 0.
  uint64_t files = 10000;
  uint64_t file_size = 110 << 10;
  uint64_t file_size_stdev = 0;
  uint64_t dataset_seed = 0;
  // The order: torch's DistributedSampler with this seed over every rank.
  uint64_t sampler_seed = 0;
  bool shuffle = true;
  DeviceSpec shared_fs{.bandwidth = 100e6, .iops = 500, .latency = 0.001};
  NodeSpec node{.ssd = {.bandwidth = 2e9, .iops = 100000},
                .link = {.bandwidth = 10e9, .latency = 5e-6}};
  uint32_t partitions = 0;  // FanStore's; 0: 4 per node
  std::vector<std::string> policies{"shared-fs", "fanstore"};
};

// Every problem of the file at once (unknown keys, malformed values), one per
// line of the InvalidArgument's message.
Result<SimConfig> LoadSimConfig(const std::string& path);
Result<SimConfig> ParseSimConfig(const std::string& yaml);

// The policies clairfs-sim knows, in the order it runs them.
const std::vector<std::string>& KnownPolicies();

}  // namespace clairfs::sim
