// SimConfig: what clairfs-sim simulates, read from a YAML file
// (docs/simulation.md lists every key). Sizes are written as in the daemon's
// config ("100M", "4G": powers of 1024); bandwidths are such sizes per second.
// Value type; the loader is thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/status.hpp"
#include "tools/sim/fanstore_source.hpp"
#include "tools/sim/job.hpp"
#include "tools/sim/shared_device.hpp"

namespace clairfs::sim {

// The order's generator (sampler.kind; tools/sim/job_order.hpp).
enum class OrderKind {
  kTorch,      // torch's DistributedSampler over every rank
  kKeras,      // image_dataset_from_directory, sharded after loading (pattern B)
  kKerasFlow,  // ImageDataGenerator.flow_from_directory and model.fit (pattern A)
};

struct SimConfig {
  JobSpec job;
  // The dataset: `files` files of `file_size` bytes each, or normally
  // distributed around it (at least 1 byte) when file_size_stdev > 0.
  uint64_t files = 10000;
  uint64_t file_size = 110 << 10;
  uint64_t file_size_stdev = 0;
  uint64_t dataset_seed = 0;
  // Class directories the files are spread over (the Keras kinds' listing).
  uint32_t classes = 1;
  // The order: its generator, with this seed (and shuffle) on every rank.
  OrderKind order = OrderKind::kTorch;
  uint64_t sampler_seed = 0;
  bool shuffle = true;
  std::string keras_version = "2.15";  // the Keras kinds' (tf.keras 2: Horovod's)
  uint64_t steps_per_epoch = 0;        // keras-flow: fit(steps_per_epoch=); 0: every batch
  std::string augment;                 // keras-flow: ImageDataGenerator's random options
  bool fit_shuffle = true;             // keras-flow: fit(shuffle=)
  DeviceSpec shared_fs{.bandwidth = 100e6, .iops = 500, .latency = 0.001};
  NodeSpec node{.ssd = {.bandwidth = 2e9, .iops = 100000},
                .link = {.bandwidth = 10e9, .latency = 5e-6}};
  uint32_t partitions = 0;  // FanStore's and clairfs's; 0: 4 per node
  // fanstore.partitions was not given (or 0): `partitions` is 4 per node,
  // and follows the node count in a sweep (AtNodes).
  bool partitions_per_node = true;
  uint64_t ram = 16ull << 30;  // clairfs, NoPFS: each node's RAM for data
  // shared-fs: each node's page cache for the files it read (LRU); unset: `ram`.
  std::optional<uint64_t> page_cache;
  uint64_t ssd_capacity = 256ull << 30;  // NoPFS: each node's SSD tier
  uint32_t fetch_slots = 2;              // clairfs: a node's fetches in flight (prefetch_threads)
  std::string placement = "balanced";    // clairfs: clairfs-partition's --placement
  bool homes_by_reader = true;        // clairfs: homes where the first epoch reads (the daemon's)
  uint32_t replicas = 1;              // clairfs: copies of each partition (the manifest's replicas)
  uint32_t stage_threads = 2;         // clairfs: a node's copying threads (stage_threads)
  uint64_t stage_chunk = 4ull << 20;  // clairfs: bytes a staging read takes at most
  double stage_yield = 0.005;         // clairfs: staging's pause after a read of its packs
  bool stage_whole_chunks = false;    // clairfs: staging reads chunks whole, holes or not
  bool stage_first_use = true;        // clairfs: stage_order first-use (the daemon's) or pack
  // NoPFS's staging-buffer prefetcher (nopfs_source.hpp): on, each rank's
  // buffer bytes and fetches at once (NoPFS's lassen.cfg: 1024 MB, 8 threads),
  // a staged sample's bytes (0: the file's).
  bool nopfs_prefetcher = true;
  uint64_t nopfs_staging = 1024ull << 20;
  uint32_t nopfs_threads = 8;
  uint64_t nopfs_sample_bytes = 0;
  // Each node's cores (node.cores), shared by the job's decoding (and compute,
  // job.compute_on_cpu) and clairfs's daemon; 0: the CPU is not modelled.
  double cores = 0;
  // clairfs's daemon's CPU, seconds of one core per byte or open (the
  // defaults: docs/simulation.md, "The daemons' CPU costs").
  double cpu_per_staged_byte = 3.3e-9;
  double cpu_per_served_byte = 3.0e-9;
  double cpu_per_peer_byte = 3.6e-9;
  double cpu_per_open = 73e-6;
  std::vector<std::string> policies{"shared-fs", "fanstore", "nopfs", "clairfs"};
};

// Every problem of the file at once (unknown keys, malformed values), one per
// line of the InvalidArgument's message.
Result<SimConfig> LoadSimConfig(const std::string& path);
Result<SimConfig> ParseSimConfig(const std::string& yaml);

// `config` with `nodes` nodes (a sweep's run): the partitions follow when
// they were 4 per node.
SimConfig AtNodes(SimConfig config, uint32_t nodes);

// A sweep's node counts, "1,2,4,8": each a decimal integer from 1 to
// kMaxSweepNodes, none twice. InvalidArgument naming the first bad one.
inline constexpr uint32_t kMaxSweepNodes = 1u << 24;
Result<std::vector<uint32_t>> ParseNodeList(const std::string& text);

// The policies clairfs-sim knows, in the order it runs them.
const std::vector<std::string>& KnownPolicies();

}  // namespace clairfs::sim
