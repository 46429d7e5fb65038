// The daemon's configuration: one struct, a default and a comment per field.
//
// Every field can be set from the YAML config file and from the command line
// (`--key value`, dashes or underscores), through the one table in config.cpp;
// config_loader.hpp combines the sources. Value type; thread-compatible.
// Adding a setting = a field here + one row in the table.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/log.hpp"
#include "base/status.hpp"

namespace clairfs::fs {

struct Config {
  // --- where ---
  std::string dataset;  // required: the clairfs-partition output dir (manifest + part-*)
  std::string mount;    // required: the mount point (created if missing; must be empty)
  // The three paths may use {rank}, {host}, $VAR, ${VAR} and ${VAR:-default}.

  // --- several nodes (an MPI job; a lone daemon is a one-node job) ---
  std::string local_dir;       // node-local directory for this rank's packs; "" = no staging
  uint32_t stage_threads = 2;  // packs copied at once while staging
  uint32_t peer_timeout_ms = 2000;  // deadline of one read from a peer before trying the next
  uint32_t server_threads = 4;      // peers' reads this rank serves at once
  uint32_t shutdown_wait_ms = 10000;  // how long a stopping rank waits for the others
  // Bound of each start-up step every rank takes together (agreeing that all
  // are ready, the manifest broadcast): a rank that does not arrive in time
  // stops the job instead of leaving the others waiting.
  uint32_t start_timeout_ms = 120000;

  // --- memory ---
  // Bytes of decoded file data kept in RAM (1 GiB): the one budget, the
  // prefetched files included.
  uint64_t ram_cache = uint64_t{1} << 30;
  // Bytes of packs the kernel is asked to read into its page cache in the
  // background, each pack on first use (0 = off). Turns a cold first epoch's
  // random reads into sequential ones; costs page cache, which stays reclaimable.
  uint64_t pack_readahead = 0;

  // --- FUSE session ---
  // Threads reading /dev/fuse; each answers at once what needs no wait
  // (lookups, attributes, listings, ioctls, READs of bytes in RAM).
  uint32_t fuse_threads = 1;
  // With one reading thread: how long it keeps looking for the next request
  // before it sleeps, in microseconds. A request that finds it awake skips
  // the wake-up of a sleeping CPU (tens of microseconds on a VM), at the cost
  // of that CPU time. 0 = sleep at once.
  uint32_t fuse_spin_us = 200;
  uint32_t threads = 10;               // threads answering READs that wait (packs, peers)
  bool clone_fd = true;                // one /dev/fuse fd per reading thread
  bool allow_other = false;            // let other users in (non-root needs user_allow_other)
  double entry_timeout = 31536000;     // s the kernel may cache a name (the dataset is immutable)
  double attr_timeout = 31536000;      // s the kernel may cache attributes
  double negative_timeout = 31536000;  // s the kernel may cache "no such name"
  // Decline the first OPEN with ENOSYS: the kernel then opens dataset files by
  // itself with keep_cache, so a warm open/read/close costs no daemon round trip.
  bool no_open = true;
  // The same for directories. Off by default: fusermount3's auto_unmount
  // tells a dead daemon from a live one by opening the mount root, which must
  // then reach the daemon (declined, a killed daemon leaves a dead mount).
  // Listings are cached by the kernel either way.
  bool no_opendir = false;
  // Kernel read-ahead window of the mount (root only; 0 keeps the kernel's
  // 128 KiB): the largest READ request a cold sequential read produces.
  uint64_t read_ahead = uint64_t{1} << 20;

  // --- clairvoyant prefetch (docs/prefetch.md, "In the daemon") ---
  // The training job's sampler: none (reactive cache only), torch-distributed,
  // torch-random, keras or order-file. Anything but none makes every OPEN
  // reach the daemon (no_open is forced to false).
  std::string prefetch_sampler = "none";
  std::string prefetch_root;   // dataset root inside the mount, relative ("" = the mount root)
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
  uint64_t prefetch_batch_size = 1;             // DataLoader batch_size (Keras batch_size)
  uint64_t prefetch_workers = 0;                // DataLoader num_workers
  uint64_t prefetch_factor = 2;                 // DataLoader prefetch_factor
  // The sampler's own settings: every other `prefetch_<name>` key (a name of
  // letters, digits, '-' and '_'), kept as given (name without the prefix
  // -> value, in the order first set). They
  // are clairfs-order's options under another spelling - prefetch_seed is
  // --seed, prefetch_keras_version --keras-version, a switch is true/false
  // (prefetch_drop_last: true, prefetch_shuffle: false for --no-shuffle) - and
  // are checked by the same parser (fs/clairfsd/prefetch_setup.hpp), which
  // knows which apply to prefetch_sampler.
  std::vector<std::pair<std::string, std::string>> prefetch_settings;
  uint32_t prefetch_threads = 2;                // fetch threads
  uint32_t prefetch_wait_ms = 2000;             // longest an open waits for its in-flight fetch
  std::string prefetch_opens = "inotify";        // how the prefetcher sees opens: inotify or fuse

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
