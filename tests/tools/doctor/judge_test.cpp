#include "tools/doctor/judge.hpp"

#include <catch2/catch.hpp>
#include <map>

#include "fs/dist/ownership.hpp"
#include "fs/fuse/probe.hpp"

namespace clairfs::doctor {
namespace {

bool Has(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

TEST_CASE("doctor: MemAvailable of a meminfo, in bytes") {
  const std::string meminfo =
      "MemTotal:       32000000 kB\nMemFree:         1000000 kB\n"
      "MemAvailable:    2097152 kB\nBuffers:          100 kB\n";
  auto v = ParseMemAvailable(meminfo);
  REQUIRE(v.ok());
  CHECK(*v == uint64_t{2} << 30);
  CHECK(ParseMemAvailable("MemTotal: 5 kB\n").status().IsCorruption());
  CHECK(!ParseMemAvailable("MemAvailable: lots\n").ok());
}

TEST_CASE("doctor: a /proc/sys number") {
  CHECK(*ParseProcNumber("8192\n", "x") == 8192);
  auto bad = ParseProcNumber("8x\n", "/p/max_user_watches");
  REQUIRE(!bad.ok());
  CHECK(Has(bad.status().message(), "/p/max_user_watches"));
  CHECK(!ParseProcNumber("", "x").ok());
}

TEST_CASE("doctor: user_allow_other in fuse.conf, not in a comment") {
  CHECK(FuseConfAllowsOther("# mount_max = 1000\nuser_allow_other\n"));
  CHECK(FuseConfAllowsOther("  user_allow_other   # for clairfs\n"));
  CHECK(!FuseConfAllowsOther("#user_allow_other\n"));
  CHECK(!FuseConfAllowsOther("# user_allow_other\nmount_max = 1000\n"));
  CHECK(!FuseConfAllowsOther(""));
}

TEST_CASE("doctor: inotify limits against the dataset's directories") {
  CHECK(!JudgeInotify(8192, 16384, 100, "/proc").problem());
  const Check few = JudgeInotify(500, 16384, 100, "/fake");
  REQUIRE(few.problem());
  CHECK(Has(few.message, "max_user_watches is 500"));
  CHECK(Has(few.message, "/fake/sys/fs/inotify/max_user_watches"));
  CHECK(Has(few.fix, "sysctl -w fs.inotify.max_user_watches="));
  CHECK(Has(few.fix, "prefetch_opens: fuse"));
  // The margin for other programs counts.
  CHECK(JudgeInotify(100 + kWatchMargin - 1, 16384, 100, "/proc").problem());
  const Check queue = JudgeInotify(1 << 20, kMinQueuedEvents - 1, 10, "/proc");
  REQUIRE(queue.problem());
  CHECK(Has(queue.message, "max_queued_events"));
  CHECK(!Has(queue.message, "max_user_watches"));
}

TEST_CASE("doctor: memory holds ram_cache and the manifest") {
  CHECK(!JudgeMemory(uint64_t{8} << 30, uint64_t{1} << 30, 1 << 20, "c.yaml").problem());
  const Check low = JudgeMemory(uint64_t{1} << 30, uint64_t{1} << 30, 1 << 20, "c.yaml");
  REQUIRE(low.problem());
  CHECK(Has(low.message, "ram_cache 1.0 GiB"));
  CHECK(Has(low.fix, "ram_cache: 511M"));
  CHECK(Has(low.fix, "c.yaml"));
}

TEST_CASE("doctor: the kernel's FUSE protocol against the adapter's minimum") {
  CHECK(JudgeFuseProtocol(7, fs::kFuseMinorRequired - 1).problem());
  CHECK(!JudgeFuseProtocol(7, fs::kFuseMinorRequired).problem());
  CHECK(Has(JudgeFuseProtocol(7, fs::kFuseMinorRequired).message, "slower"));
  CHECK(!Has(JudgeFuseProtocol(7, 38).message, "slower"));
  CHECK(JudgeFuseProtocol(8, 1).problem());
}

TEST_CASE("doctor: nodes and rank from flags, then Slurm's variables") {
  std::map<std::string, std::string> vars;
  auto env = [&vars](const char* n) -> const char* {
    auto it = vars.find(n);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
  std::string from;
  CHECK(JobNodes(0, env, &from) == 1);
  CHECK(from == "default");
  vars["SLURM_JOB_NUM_NODES"] = "3";
  CHECK(JobNodes(0, env, &from) == 3);
  vars["SLURM_NNODES"] = "4";
  CHECK(JobNodes(0, env, &from) == 4);
  CHECK(from == "SLURM_NNODES");
  CHECK(JobNodes(2, env, &from) == 2);
  CHECK(from == "--nodes");
  vars["SLURM_NNODES"] = "x";
  CHECK(JobNodes(0, env, &from) == 3);
  CHECK(NodeRank(std::nullopt, env, &from) == 0);
  vars["SLURM_NODEID"] = "2";
  CHECK(NodeRank(std::nullopt, env, &from) == 2);
  CHECK(NodeRank(1, env, &from) == 1);
}

TEST_CASE("doctor: a node's share follows the daemon's ownership") {
  // 5 partitions + the broadcast pack on 2 nodes: node 0 holds 0, 2, 4 and
  // the broadcast pack.
  const std::vector<uint64_t> sizes = {10, 20, 30, 40, 50, 7};
  const fs::Ownership own(5, 1, 2, {});
  auto none = [](uint32_t) { return false; };
  CHECK(ShareBytes(sizes, own.PartitionsOf(0), none) == 10 + 30 + 50 + 7);
  CHECK(ShareBytes(sizes, own.PartitionsOf(1), none) == 20 + 40 + 7);
  // Packs already staged by an earlier job are not copied again.
  CHECK(ShareBytes(sizes, own.PartitionsOf(0), [](uint32_t p) { return p == 4; }) == 47);
  // Two replicas on two nodes: everything everywhere.
  CHECK(ShareBytes(sizes, fs::Ownership(5, 2, 2, {}).PartitionsOf(1), none) == 157);
}

TEST_CASE("doctor: which MPI a version text names") {
  CHECK(FamilyOf("MPICH Version:\t4.0.2\nMPICH Release date: ...") == MpiFamily::kMpich);
  CHECK(FamilyOf("HYDRA build details:\n    Version: 4.0.2\n") == MpiFamily::kMpich);
  CHECK(FamilyOf("Intel(R) MPI Library for Linux* OS, Version 2021.9") == MpiFamily::kMpich);
  CHECK(FamilyOf("mpiexec (OpenRTE) 4.1.4\n\nReport bugs to ...") == MpiFamily::kOpenMpi);
  CHECK(FamilyOf("mpiexec (Open MPI) 5.0.3\n") == MpiFamily::kOpenMpi);
  CHECK(FamilyOf("Open MPI v4.1.4, package: Debian") == MpiFamily::kOpenMpi);
  CHECK(FamilyOf("something else") == MpiFamily::kUnknown);
  CHECK(VersionWords("HYDRA build details:\n    Version:     4.0.2\n") == "MPICH 4.0.2");
  CHECK(VersionWords("MPICH Version:\t4.1\nMPICH Release date: x") == "MPICH 4.1");
  CHECK(VersionWords("  mpiexec (OpenRTE) 4.1.4\n\nReport bugs") == "mpiexec (OpenRTE) 4.1.4");
}

TEST_CASE("doctor: MPI built with against MPI in the environment") {
  MpiFacts f;
  f.built_with = "MPICH 4.0.2";
  f.runs_with = "MPICH Version:\t4.0.2\n";
  f.launcher = "/usr/bin/mpiexec.mpich";
  f.launcher_version = "HYDRA build details:\n    Version: 4.0.2\n";
  CHECK(!JudgeMpi(f).problem());
  f.launcher = "/opt/ompi/bin/mpiexec";
  f.launcher_version = "mpiexec (OpenRTE) 4.1.4\n";
  const Check wrong = JudgeMpi(f);
  REQUIRE(wrong.problem());
  CHECK(Has(wrong.message, "/opt/ompi/bin/mpiexec is Open MPI's"));
  CHECK(Has(wrong.fix, "MPICH's mpiexec first on PATH"));
  // Under Slurm srun starts the daemons: the other mpiexec is only noted.
  f.launcher_used = false;
  CHECK(!JudgeMpi(f).problem());
  CHECK(Has(JudgeMpi(f).message, "not used"));
  f.launcher.clear();
  CHECK(!JudgeMpi(f).problem());
  f.launcher_used = true;
  CHECK(JudgeMpi(f).problem());
  f.launcher = "/usr/bin/mpiexec.mpich";
  f.launcher_version = "HYDRA build details:\n";
  f.runs_with = "Open MPI v4.1.4";
  CHECK(Has(JudgeMpi(f).message, "not the one clairfs was built with"));
}

TEST_CASE("doctor: the report's forms and exit code") {
  std::vector<Check> checks = {Check::Ok("a", "fine"), Check::Skipped("b", "no --dataset")};
  CHECK(ExitCode(checks) == 0);
  CHECK(TextReport(checks) == "ok      a: fine\nskipped b: no --dataset\n");
  CHECK(JsonReport(checks) ==
        "{\"ok\":true,\"checks\":[{\"name\":\"a\",\"state\":\"ok\",\"ok\":true,\"message\":"
        "\"fine\",\"fix\":\"\"},{\"name\":\"b\",\"state\":\"skipped\",\"ok\":false,\"message\":"
        "\"no --dataset\",\"fix\":\"\"}]}\n");
  checks.push_back(Check::Problem("c", "broken", "mend it"));
  CHECK(ExitCode(checks) == 1);
  CHECK(Has(TextReport(checks), "PROBLEM c: broken\n        fix: mend it\n"));
}

TEST_CASE("doctor: sizes for people") {
  CHECK(HumanBytes(17) == "17 B");
  CHECK(HumanBytes(1536) == "1.5 KiB");
  CHECK(HumanBytes(uint64_t{3} << 30) == "3.0 GiB");
}

}  // namespace
}  // namespace clairfs::doctor
