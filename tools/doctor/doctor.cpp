#include "tools/doctor/doctor.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "tools/doctor/judge.hpp"

namespace clairfs::doctor {

// Not ReadWholeFile: a /proc file's size is 0, its text comes by reading on.
Result<std::string> ReadText(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno(errno, path);
  std::string text;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
  const int e = errno;
  ::close(fd);
  if (n < 0) return Status::FromErrno(e, path);
  return text;
}

std::string FindOnPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string_view dirs = path ? path : "";
  while (true) {
    const size_t colon = std::min(dirs.find(':'), dirs.size());
    const std::string dir(dirs.substr(0, colon));
    const std::string file = (dir.empty() ? "." : dir) + "/" + name;
    struct stat st;
    if (::stat(file.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        ::access(file.c_str(), X_OK) == 0) {
      return file;
    }
    if (colon == dirs.size()) return "";
    dirs.remove_prefix(colon + 1);
  }
}

std::vector<Check> RunChecks(const DoctorOptions& options) {
  Context ctx;
  ctx.options = options;
  ctx.root = ::getuid() == 0;
  ctx.nodes = JobNodes(options.nodes, std::getenv, &ctx.nodes_from);
  ctx.rank = NodeRank(options.rank, std::getenv, &ctx.rank_from);
  std::vector<Check> checks;
  checks.push_back(CheckConfig(&ctx));
  checks.push_back(CheckManifest(&ctx));
  checks.push_back(CheckDevFuse(ctx));
  checks.push_back(CheckFusermount(ctx));
  checks.push_back(CheckAllowOther(ctx));
  checks.push_back(CheckFuseProtocol(ctx));
  checks.push_back(CheckInotify(ctx));
  checks.push_back(CheckLocalSpace(ctx));
  checks.push_back(CheckMemory(ctx));
  checks.push_back(CheckMpi(ctx));
  return checks;
}

}  // namespace clairfs::doctor
