// clairfs-sim: a training job's I/O simulated at any scale, per policy.
//
// usage: clairfs-sim [--config CLUSTER.yaml] [--csv FILE]
// Runs the job of the config (docs/simulation.md) once per policy and prints
// one CSV row per policy and epoch (to FILE, or stdout), a progress line per
// policy and epoch on stderr. Exit 0; 1 when the config or a run fails; 2 on bad usage.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>

#include "base/cli.hpp"
#include "tools/sim/simulate.hpp"

namespace {

constexpr char kUsage[] =
    "usage: clairfs-sim [--config CLUSTER.yaml] [--csv FILE]\n"
    "  Simulates the config's training job (nodes x ranks, dataset, shared file\n"
    "  system, node SSDs and links; docs/simulation.md lists every key, and the\n"
    "  defaults without --config) once per policy: shared-fs (PyTorch's loader on\n"
    "  the shared file system), fanstore, nopfs, clairfs. Prints one CSV row per\n"
    "  policy and epoch: seconds, stall fraction, bytes by source, staging time,\n"
    "  the shared file system's peak requests in progress.\n";

// docs/simulation.md describes every column; new ones go at the end.
constexpr char kHeader[] =
    "policy,epoch,seconds,stall_fraction,steps,ram_bytes,local_bytes,peer_bytes,"
    "shared_fs_bytes,staging_seconds,peak_shared_fs_requests,prefetches,prefetch_local_bytes,"
    "prefetch_peer_bytes,prefetch_shared_fs_bytes,nodes,ranks_per_node\n";

void Row(std::ostream& out, const clairfs::sim::JobSpec& job, const clairfs::sim::PolicyRun& run) {
  for (size_t e = 0; e < run.epochs.size(); ++e) {
    const auto& x = run.epochs[e];
    out << run.policy << ',' << e << ',' << x.seconds << ',' << x.stall_fraction << ',' << x.steps
        << ',' << x.sources.ram_bytes << ',' << x.sources.local_bytes << ',' << x.sources.peer_bytes
        << ',' << x.sources.shared_fs_bytes << ',' << run.staging_seconds << ','
        << run.peak_shared_fs_requests << ',' << x.prefetched.reads << ','
        << x.prefetched.local_bytes << ',' << x.prefetched.peer_bytes << ','
        << x.prefetched.shared_fs_bytes << ',' << job.nodes << ',' << job.ranks_per_node << '\n';
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string config_path, csv_path;
  CLI::App app("clairfs-sim", "clairfs-sim");
  app.add_option("--config", config_path);
  app.add_option("--csv", csv_path);
  if (auto done = clairfs::cli::ParseMain(app, argc, argv, "clairfs-sim", kUsage)) return *done;
  auto config = config_path.empty() ? clairfs::sim::ParseSimConfig("")
                                    : clairfs::sim::LoadSimConfig(config_path);
  if (!config.ok()) {
    std::fprintf(stderr, "clairfs-sim: %s\n", config.status().message().c_str());
    return 1;
  }
  std::ofstream file;
  if (!csv_path.empty()) {
    file.open(csv_path);
    if (!file) {
      std::fprintf(stderr, "clairfs-sim: cannot write %s\n", csv_path.c_str());
      return 1;
    }
  }
  std::ostream& out = csv_path.empty() ? std::cout : file;
  out << kHeader;
  const auto sizes = clairfs::sim::DatasetSizes(*config);
  for (const std::string& policy : config->policies) {
    std::fprintf(stderr, "clairfs-sim: %s: %u nodes x %u ranks, %zu files, %u epochs...\n",
                 policy.c_str(), config->job.nodes, config->job.ranks_per_node, sizes.size(),
                 config->job.epochs);
    const auto started = std::chrono::steady_clock::now();
    auto run = clairfs::sim::RunPolicy(
        *config, policy, sizes, [&](uint32_t epoch, const clairfs::sim::EpochResult& e) {
          const std::chrono::duration<double> took = std::chrono::steady_clock::now() - started;
          std::fprintf(stderr,
                       "clairfs-sim: %s: epoch %u of %u: %.2f s simulated (%.1f s so far)\n",
                       policy.c_str(), epoch + 1, config->job.epochs, e.seconds, took.count());
        });
    if (!run.ok()) {
      std::fprintf(stderr, "clairfs-sim: %s: %s\n", policy.c_str(), run.status().message().c_str());
      return 1;
    }
    Row(out, config->job, *run);
    out.flush();
  }
  return 0;
}
