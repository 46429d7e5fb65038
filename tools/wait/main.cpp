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

#include "base/cli.hpp"

namespace {

constexpr long kFuseSuperMagic = 0x65735546;
constexpr char kUsage[] = "usage: clairfs-wait MNT... [--timeout SECONDS] [--quiet]\n";

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
  double timeout = 300;
  bool quiet = false;
  std::vector<std::string> mounts;
  CLI::App app("clairfs-wait", "clairfs-wait");
  app.add_option("MNT", mounts);
  app.add_option("--timeout", timeout);
  app.add_flag("--quiet", quiet);
  if (auto done = clairfs::cli::ParseMain(app, argc, argv, "clairfs-wait", kUsage)) return *done;
  if (!(timeout >= 0)) {
    return clairfs::cli::UsageError("clairfs-wait", "--timeout must be a number of seconds >= 0");
  }
  if (mounts.empty()) return clairfs::cli::UsageError("clairfs-wait", "no mount point given");
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
