// The daemon's configuration: one struct, a default and a comment per field.
//
// Every setting can be set from the YAML config file and from the command
// line (`--key value`, dashes or underscores), through the one table in
// config.cpp; config_loader.hpp combines the sources. Value type;
// thread-compatible. Adding a setting = a field with its default and comment
// in its part's Options + one row in the table.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/log.hpp"
#include "base/status.hpp"
#include "fs/dist/cluster.hpp"
#include "fs/engine/prefetch_engine.hpp"
#include "fs/fuse/fuse_adapter.hpp"
#include "fs/vfs/vfs.hpp"

namespace clairfs::fs {

// Each part's Options owns its settings and their defaults; the Config is
// made of them, and the table of keys (config.cpp) points at their fields.
struct Config {
  // --- where, and several nodes (an MPI job; a lone daemon is a one-node job) ---
  // cluster.dataset (required, the clairfs-partition output dir) and
  // cluster.local_dir, like fuse.mount, may use {rank}, {host}, $VAR, ${VAR}
  // and ${VAR:-default}.
  ClusterOptions cluster;

  // --- memory ---
  // Bytes of decoded file data kept in RAM (1 GiB): the one budget, the
  // prefetched files included (the RamCache's capacity).
  uint64_t ram_cache = uint64_t{1} << 30;
  // Frames of a framed file read ahead while it is read frame after frame
  // (PackPayloadSource; 0 = off).
  uint32_t frames_ahead = 4;

  // --- FUSE session ---
  FuseOptions fuse;  // fuse.mount is required
  VfsOptions vfs;    // the keys no_open and no_opendir; the rest is wiring main sets

  // --- clairvoyant prefetch (docs/prefetch.md, "In the daemon") ---
  // The training job's sampler: none (reactive cache only) or one of
  // clairfs-order's (torch-distributed, torch-random, torch-sequential, keras,
  // keras-flow, order-file, tf-list-files). Anything but none makes every OPEN
  // reach the daemon (vfs.decline_open is forced to false).
  std::string prefetch_sampler = "none";
  std::string prefetch_root;  // dataset root inside the mount, relative ("" = the mount root)
  uint64_t prefetch_start_epoch = 0;  // first epoch the job runs
  uint64_t prefetch_epochs = 1;       // epochs from start_epoch
  uint64_t prefetch_world_size = 1;   // training ranks in the job
  // Training ranks per node (Slurm block distribution: node n holds ranks
  // [n*G, (n+1)*G), n = this daemon's MPI rank). 0 = world_size / daemons.
  uint64_t prefetch_ranks_per_node = 0;
  // Whether this node's training processes all read one order (rank 0's):
  // "true", "false" (each its own rank's), or "auto" = true when the sampler
  // has a single consumer (keras, keras-flow, torch-random, an order file of
  // one rank...), as when every Horovod rank iterates the whole dataset.
  std::string prefetch_shared_stream = "auto";
  uint64_t prefetch_batch_size = 1;  // DataLoader batch_size (Keras batch_size)
  uint64_t prefetch_workers = 0;     // DataLoader num_workers
  uint64_t prefetch_factor = 2;      // DataLoader prefetch_factor
  // The sampler's own settings: every other `prefetch_<name>` key (a name of
  // letters, digits, '-' and '_'), kept as given (name without the prefix
  // -> value, in the order first set). They are the rows of clairfs-order's
  // table of sampler settings (prefetch/options/sampler_settings.hpp) under
  // another spelling - prefetch_seed is --seed, prefetch_keras_version
  // --keras-version, a switch is true/false (prefetch_drop_last: true,
  // prefetch_shuffle: false for --no-shuffle) - and are set through that table
  // (fs/clairfsd/prefetch_setup.hpp), which knows which apply to
  // prefetch_sampler.
  std::vector<std::pair<std::string, std::string>> prefetch_settings;
  PrefetchEngineOptions prefetch_engine;   // prefetch_threads, prefetch_wait_ms
  std::string prefetch_opens = "inotify";  // how the prefetcher sees opens: inotify or fuse
  // The job's Python processes may report their loaders' orders to this
  // daemon (docs/report.md); reported orders take over from the settings.
  bool report = true;

  // --- the writable area (docs/fuse.md, "Writing through the mount") ---
  // writes_dir names it (a directory of the mount's root; "" = none, the
  // mount is read-only); writes_local and writes_persist, both required with
  // it, may use {rank}, {host} and environment variables like local_dir.
  WriteAreaOptions writes;
  // A stopping daemon waits for the drain while it makes progress, at most
  // this long without any.
  std::chrono::milliseconds writes_stall{60000};

  // --- logging ---
  LogLevel log_level = LogLevel::kInfo;  // error, warn, info or debug
};

// The settable keys in table order.
std::vector<std::string> ConfigKeys();
// Sets one field from its text form. Unknown key or bad value: InvalidArgument
// naming the key and the value.
Status SetConfigValue(Config* config, std::string_view key, std::string_view value);
// Errors that concern the whole config (missing required keys), one per entry.
std::vector<std::string> ValidateConfig(const Config& config);
// The effective config as YAML that the loader reads back ("key: value" lines).
std::string DescribeConfig(const Config& config);
// One line per key with its default, for --help.
std::string ConfigHelp();

}  // namespace clairfs::fs
