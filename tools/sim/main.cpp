// clairfs-sim: a training job's I/O simulated at any scale, per policy.
//
// usage: clairfs-sim [--config CLUSTER.yaml] [--csv FILE] [--nodes LIST]
// Runs the job of the config (docs/simulation.md) once per policy (and per
// node count of LIST, in place of job.nodes) and prints one CSV row per
// policy and epoch (to FILE, or stdout), a progress line per run, policy and
// epoch on stderr. Exit 0; 1 when the config or a run fails; 2 on bad usage.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "base/cli.hpp"
#include "tools/sim/simulate.hpp"

namespace {

constexpr char kUsage[] =
    "usage: clairfs-sim [--config CLUSTER.yaml] [--csv FILE] [--nodes LIST]\n"
    "  Simulates the config's training job (nodes x ranks, dataset, shared file\n"
    "  system, node SSDs and links; docs/simulation.md lists every key, and the\n"
    "  defaults without --config) once per policy: shared-fs (PyTorch's loader on\n"
    "  the shared file system), fanstore, nopfs, clairfs. Prints one CSV row per\n"
    "  policy and epoch: seconds, stall fraction, bytes by source, staging time,\n"
    "  the shared file system's peak requests in progress.\n"
    "  --nodes 1,2,4,8 runs it at each node count in turn (job.nodes ignored),\n"
    "  the rows of every run in one CSV.\n";

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

// "1 node", "2 nodes": the progress lines' counts.
std::string Count(uint64_t n, const char* what) {
  return std::to_string(n) + ' ' + what + (n == 1 ? "" : "s");
}

// Runs every policy of `config`, a row per policy and epoch to `out`; false
// (the reason on stderr) when a run fails.
bool RunPolicies(const clairfs::sim::SimConfig& config, const std::vector<uint64_t>& sizes,
                 std::ostream& out) {
  for (const std::string& policy : config.policies) {
    std::fprintf(stderr, "clairfs-sim: %s: %s x %s, %s, %s...\n", policy.c_str(),
                 Count(config.job.nodes, "node").c_str(),
                 Count(config.job.ranks_per_node, "rank").c_str(),
                 Count(sizes.size(), "file").c_str(), Count(config.job.epochs, "epoch").c_str());
    const auto started = std::chrono::steady_clock::now();
    auto run = clairfs::sim::RunPolicy(
        config, policy, sizes, [&](uint32_t epoch, const clairfs::sim::EpochResult& e) {
          const std::chrono::duration<double> took = std::chrono::steady_clock::now() - started;
          std::fprintf(stderr,
                       "clairfs-sim: %s: epoch %u of %u: %.2f s simulated (%.1f s so far)\n",
                       policy.c_str(), epoch + 1, config.job.epochs, e.seconds, took.count());
        });
    if (!run.ok()) {
      std::fprintf(stderr, "clairfs-sim: %s: %s\n", policy.c_str(), run.status().message().c_str());
      return false;
    }
    Row(out, config.job, *run);
    out.flush();
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::string config_path, csv_path, nodes_list;
  CLI::App app("clairfs-sim", "clairfs-sim");
  app.add_option("--config", config_path);
  app.add_option("--csv", csv_path);
  CLI::Option* nodes = app.add_option("--nodes", nodes_list);
  if (auto done = clairfs::cli::ParseMain(app, argc, argv, "clairfs-sim", kUsage)) return *done;
  std::vector<uint32_t> sweep;
  if (nodes->count() > 0) {
    auto list = clairfs::sim::ParseNodeList(nodes_list);
    if (!list.ok()) {
      std::fprintf(stderr, "clairfs-sim: --nodes: %s\n%s", list.status().message().c_str(), kUsage);
      return 2;
    }
    sweep = std::move(list).value();
  }
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
  // The dataset is the same at every node count.
  const auto sizes = clairfs::sim::DatasetSizes(*config);
  if (sweep.empty()) return RunPolicies(*config, sizes, out) ? 0 : 1;
  const auto started = std::chrono::steady_clock::now();
  for (size_t i = 0; i < sweep.size(); ++i) {
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - started;
    std::fprintf(stderr, "clairfs-sim: run %zu of %zu: %s (%.1f s so far)\n", i + 1, sweep.size(),
                 Count(sweep[i], "node").c_str(), took.count());
    if (!RunPolicies(clairfs::sim::AtNodes(*config, sweep[i]), sizes, out)) return 1;
  }
  return 0;
}
