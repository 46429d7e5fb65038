// clairfs-wait: returns once every given mount point is served by clairfsd.
//
// usage: clairfs-wait MNT... [--timeout SECONDS] [--quiet]
// A mount is ready when it is a FUSE mount and its control file
// MNT/.clairfs/stats.json opens. Exit 0 when all are ready, 1 on timeout
// (naming the mounts that are not), 2 on bad usage.
#include <fcntl.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "base/args.hpp"

namespace {

constexpr long kFuseSuperMagic = 0x65735546;

bool Ready(const std::string& mnt) {
  struct statfs sf;
  if (::statfs(mnt.c_str(), &sf) != 0 || sf.f_type != kFuseSuperMagic) return false;
  const int fd = ::open((mnt + "/.clairfs/stats.json").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  ::close(fd);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  clairfs::pack::Args a(argc - 1, argv + 1);
  double timeout = 300;
  a.Value("--timeout", &timeout);
  const bool quiet = a.Flag("--quiet");
  if (a.Flag("--help") || a.Flag("-h")) {
    std::puts("usage: clairfs-wait MNT... [--timeout SECONDS] [--quiet]");
    return 0;
  }
  std::vector<std::string> mounts;
  std::string problem;
  if (!a.Rest(&mounts) || !a.error().empty()) {
    problem = a.error();
  } else if (!(timeout >= 0)) {
    problem = "--timeout must be a number of seconds >= 0";
  } else if (mounts.empty()) {
    problem = "no mount point given";
  }
  if (!problem.empty()) {
    std::fprintf(stderr, "clairfs-wait: %s\nusage: clairfs-wait MNT... [--timeout SECONDS] [--quiet]\n",
                 problem.c_str());
    return 2;
  }
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + std::chrono::duration<double>(timeout);
  std::vector<bool> ready(mounts.size(), false);
  size_t n_ready = 0, shown = SIZE_MAX;
  for (;;) {
    for (size_t i = 0; i < mounts.size(); ++i) {
      if (!ready[i] && Ready(mounts[i])) {
        ready[i] = true;
        ++n_ready;
      }
    }
    if (!quiet && n_ready != shown) {
      std::fprintf(stderr, "clairfs-wait: %zu/%zu mounts ready\n", n_ready, mounts.size());
      shown = n_ready;
    }
    if (n_ready == mounts.size()) return 0;
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::fprintf(stderr, "clairfs-wait: timed out after %g s; not ready:", timeout);
  for (size_t i = 0; i < mounts.size(); ++i) {
    if (!ready[i]) std::fprintf(stderr, " %s", mounts[i].c_str());
  }
  std::fprintf(stderr, "\n");
  return 1;
}
