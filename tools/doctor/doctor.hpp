// clairfs-doctor's checks: whether a clairfsd job would work on this node.
//
// Each check is one function over the Context (the command line, the config
// and the dataset's manifest, loaded once) and returns one Check. The rules
// they apply are in judge.hpp; here is the I/O that feeds them. Single-thread
// (the FUSE probe redirects stderr while it mounts).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fs/config/config.hpp"
#include "partitioner/format/manifest.hpp"
#include "tools/doctor/check.hpp"

namespace clairfs::doctor {

struct DoctorOptions {
  std::string dataset;           // --dataset ("" = the config's dataset, if any)
  std::string local_dir;         // --local-dir ("" = the config's local_dir, if any)
  std::string config;            // --config: clairfsd's YAML config ("" = defaults)
  std::string mount;             // --mount: the job's mount point (for the config's checks)
  uint64_t nodes = 0;            // --nodes (0: SLURM_NNODES, SLURM_JOB_NUM_NODES, else 1)
  std::optional<uint64_t> rank;  // --rank (default SLURM_NODEID, else 0)
  bool allow_other = false;      // --allow-other: check user_allow_other even without a config
  bool verify_packs = false;     // --verify-packs: each pack's whole checksum
  std::string proc = "/proc";    // --proc: where meminfo and sys/fs/inotify are read
};

struct Context {
  DoctorOptions options;
  fs::Config config;            // the defaults when no --config, or when it did not load
  bool config_refused = false;  // the config did not load: checks of its values are skipped
  std::string dataset;          // expanded ({rank}, {host}, $VAR); "" = not given
  std::string local_dir;        // expanded; "" = not given
  std::shared_ptr<const format::Manifest> manifest;  // null: none or unreadable
  uint64_t nodes = 1, rank = 0;
  std::string nodes_from, rank_from;  // where they came from (--nodes, SLURM_NNODES, ...)
  bool root = false;                  // real uid 0
};

// Runs every check in order (config and manifest first: the others use them).
std::vector<Check> RunChecks(const DoctorOptions& options);

// The checks, one function each (fuse_checks.cpp, node_checks.cpp,
// dataset_checks.cpp, mpi_check.cpp).
Check CheckConfig(Context* ctx);    // loads ctx->config
Check CheckManifest(Context* ctx);  // loads ctx->manifest; packs present, --verify-packs
Check CheckDevFuse(const Context& ctx);
Check CheckFusermount(const Context& ctx);
Check CheckAllowOther(const Context& ctx);
Check CheckFuseProtocol(const Context& ctx);
Check CheckInotify(const Context& ctx);
Check CheckLocalSpace(const Context& ctx);
Check CheckMemory(const Context& ctx);
Check CheckMpi(const Context& ctx);

// The file's text; IOError naming it when it cannot be read.
Result<std::string> ReadText(const std::string& path);
// `name`'s path found on PATH the way a shell finds it, or "".
std::string FindOnPath(const std::string& name);

}  // namespace clairfs::doctor
