// clairfs-doctor: says, before a job spends its allocation, whether clairfsd
// would work on this node, and what to do about each thing that would not.
// The usage text below is the manual; docs/doctor.md explains each check.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "base/cli.hpp"
#include "tools/doctor/check.hpp"
#include "tools/doctor/doctor.hpp"
#include "tools/doctor/judge.hpp"

namespace {

constexpr char kUsage[] =
    "usage: clairfs-doctor [--dataset D] [--local-dir L] [--config C] [--nodes N]\n"
    "                      [--rank R] [--mount M] [--allow-other] [--verify-packs] [--json]\n"
    "Checks whether a clairfs job would work on this node (a login node, or a\n"
    "job step on a compute node) and prints one line per check: ok, PROBLEM\n"
    "(with the fix: a command, a config key, or whom to ask) or skipped (an\n"
    "input it needs was not given; a skipped check has not passed).\n"
    "\n"
    "Checks, in order:\n"
    "  config         C loads as clairfsd would load it (with D, L, M over it)\n"
    "  manifest       D/manifest reads and is intact; every pack present with its\n"
    "                 size and header (--verify-packs: whole checksums, reads all)\n"
    "  dev_fuse       /dev/fuse exists and opens read-write for this user\n"
    "  fusermount3    on PATH and setuid root (not needed by root)\n"
    "  allow_other    user_allow_other in /etc/fuse.conf, when allow_other is asked\n"
    "                 for (allow_other: true in C, or --allow-other)\n"
    "  fuse_protocol  a trial mount on a temporary directory works, and the\n"
    "                 kernel's FUSE protocol is one clairfsd can use (7.23+)\n"
    "  inotify        max_user_watches and max_queued_events hold the watches of\n"
    "                 D's directories (when opens are seen through inotify)\n"
    "  local_space    free space where L is (or will be) holds this node's packs\n"
    "  memory         MemAvailable holds C's ram_cache and the manifest\n"
    "  mpi            the MPI library at run time and the mpiexec clairfs-run\n"
    "                 would use are those clairfs was built with\n"
    "\n"
    "Options (a path given twice: the last one counts):\n"
    "  --dataset D     clairfs-partition output (default: the config's dataset)\n"
    "  --local-dir L   node-local directory for staged packs (default: the\n"
    "                  config's local_dir); {rank}, {host}, $VAR as in clairfsd\n"
    "  --config C      clairfsd's YAML config (default: clairfsd's defaults)\n"
    "  --mount M       the job's mount point (checked as a config key only)\n"
    "  --nodes N       nodes of the job (default: SLURM_NNODES, SLURM_JOB_NUM_NODES, 1)\n"
    "  --rank R        this node's rank in the job (default: SLURM_NODEID, 0)\n"
    "  --allow-other   check user_allow_other even when the config does not ask\n"
    "  --verify-packs  check each pack's checksum (reads the whole dataset)\n"
    "  --json          one JSON object instead of lines: {\"ok\": bool, \"checks\":\n"
    "                  [{\"name\", \"state\" (ok|problem|skipped), \"ok\", \"message\",\n"
    "                  \"fix\"}, ...]}\n"
    "  --proc DIR      read meminfo and sys/fs/inotify/* under DIR instead of /proc\n"
    "                  (for tests)\n"
    "  -h, --help      this text\n"
    "\n"
    "Exit status: 0 when no check found a problem (a job would work here), 1 when\n"
    "one did, 2 on bad usage.\n";

}  // namespace

int main(int argc, char** argv) {
  clairfs::doctor::DoctorOptions o;
  bool json = false;
  uint64_t rank = 0;
  CLI::App app("clairfs-doctor", "clairfs-doctor");
  // A path given twice: the last wins, as on clairfsd's command line.
  for (auto [name, out] : {std::pair{"--dataset", &o.dataset},
                           {"--local-dir", &o.local_dir},
                           {"--config", &o.config},
                           {"--mount", &o.mount},
                           {"--proc", &o.proc}}) {
    app.add_option(name, *out)->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  }
  clairfs::cli::AddU64(app, "--nodes", &o.nodes);
  CLI::Option* rank_option = clairfs::cli::AddU64(app, "--rank", &rank);
  app.add_flag("--allow-other", o.allow_other);
  app.add_flag("--verify-packs", o.verify_packs);
  app.add_flag("--json", json);
  if (auto done = clairfs::cli::ParseMain(app, argc, argv, "clairfs-doctor", kUsage)) return *done;
  if (rank_option->count() > 0) o.rank = rank;
  std::string from;
  const uint64_t nodes = clairfs::doctor::JobNodes(o.nodes, std::getenv, &from);
  const uint64_t r = clairfs::doctor::NodeRank(o.rank, std::getenv, &from);
  if (r >= nodes) {
    return clairfs::cli::UsageError("clairfs-doctor", "rank " + std::to_string(r) +
                                                          " is not below the job's " +
                                                          std::to_string(nodes) + " nodes");
  }
  const auto checks = clairfs::doctor::RunChecks(o);
  const std::string out =
      json ? clairfs::doctor::JsonReport(checks) : clairfs::doctor::TextReport(checks);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return clairfs::doctor::ExitCode(checks);
}
