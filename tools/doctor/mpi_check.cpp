// The MPI clairfs was built with against the one this environment gives it.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>

#include "fs/net/mpi_transport.hpp"
#include "tools/doctor/doctor.hpp"
#include "tools/doctor/judge.hpp"

namespace clairfs::doctor {
namespace {

// What `path --version` prints (stdout and stderr), waiting at most `limit`;
// "" when it cannot run or says nothing in time.
std::string VersionText(const std::string& path, std::chrono::milliseconds limit) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return "";
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int null = ::open("/dev/null", O_RDONLY);
    ::dup2(null, 0);
    ::dup2(fds[1], 1);
    ::dup2(fds[1], 2);
    ::execl(path.c_str(), path.c_str(), "--version", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(fds[1]);
  std::string text;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (pid > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd p{fds[0], POLLIN, 0};
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
    char buf[1024];
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  if (pid > 0) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
  return text;
}

}  // namespace

Check CheckMpi(const Context& ctx) {
  MpiFacts facts;
  facts.built_with = fs::MpiBuiltWith();
  facts.runs_with = fs::MpiRunsWith();
  // As clairfs-run chooses: srun under Slurm unless CLAIRFS_LAUNCHER=mpiexec;
  // then mpiexec.mpich if there is one, else mpiexec.
  const char* job = std::getenv("SLURM_JOB_ID");
  const char* launcher = std::getenv("CLAIRFS_LAUNCHER");
  facts.launcher_used = !(job && *job && !FindOnPath("srun").empty() &&
                          !(launcher && std::string(launcher) == "mpiexec"));
  facts.launcher = FindOnPath("mpiexec.mpich");
  if (facts.launcher.empty()) facts.launcher = FindOnPath("mpiexec");
  if (!facts.launcher.empty()) {
    facts.launcher_version = VersionText(facts.launcher, std::chrono::seconds(10));
  }
  return JudgeMpi(facts);
}

}  // namespace clairfs::doctor
