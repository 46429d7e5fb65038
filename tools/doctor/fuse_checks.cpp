// The FUSE checks: the device, the setuid helper, allow_other, a real mount.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "fs/fuse/probe.hpp"
#include "tools/doctor/doctor.hpp"
#include "tools/doctor/judge.hpp"

namespace clairfs::doctor {
namespace {

constexpr char kDevFuse[] = "/dev/fuse";
constexpr char kFuseConf[] = "/etc/fuse.conf";  // where fusermount3 reads it
constexpr char kAskFuse[] =
    "ask your site's administrators to let users use FUSE on the compute nodes: /dev/fuse "
    "mode 0666 (as the fuse3 package sets it) and allowed in the job's device cgroup";

std::string Mode(mode_t m) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(m & 07777));
  return buf;
}

std::string User() { return "uid " + std::to_string(::getuid()); }

}  // namespace

Check CheckDevFuse(const Context& ctx) {
  struct stat st;
  if (::stat(kDevFuse, &st) != 0) {
    return Check::Problem("dev_fuse", std::string(kDevFuse) + " does not exist on this node",
                          "ask your site's administrators to load the fuse kernel module "
                          "(modprobe fuse) and to expose /dev/fuse inside jobs and containers");
  }
  if (!S_ISCHR(st.st_mode)) {
    return Check::Problem("dev_fuse", std::string(kDevFuse) + " is not a character device",
                          kAskFuse);
  }
  const std::string mode = "mode " + Mode(st.st_mode) + ", owner uid " + std::to_string(st.st_uid);
  // access() answers for the real uid, as fusermount3 opens it.
  if (::access(kDevFuse, R_OK | W_OK) != 0) {
    return Check::Problem(
        "dev_fuse",
        std::string(kDevFuse) + " is not readable and writable by " + User() + " (" + mode + ")",
        kAskFuse);
  }
  // Permissions may allow what the job's device cgroup refuses.
  const int fd = ::open(kDevFuse, O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    const int e = errno;
    return Check::Problem("dev_fuse",
                          "opening " + std::string(kDevFuse) + " failed: " + std::strerror(e) +
                              " (" + mode + "; a device cgroup may refuse it)",
                          kAskFuse);
  }
  ::close(fd);
  return Check::Ok("dev_fuse", std::string(kDevFuse) + " opens read-write for " + User() +
                                   (ctx.root ? " (root)" : "") + " (" + mode + ")");
}

Check CheckFusermount(const Context& ctx) {
  const std::string path = FindOnPath("fusermount3");
  if (ctx.root) {
    return Check::Ok("fusermount3", "not needed: root mounts without it" +
                                        (path.empty() ? std::string() : " (" + path + ")"));
  }
  if (path.empty()) {
    return Check::Problem("fusermount3",
                          "fusermount3 is not on PATH: a user who is not root mounts through it",
                          "ask your site's administrators to install fuse3 (it provides the "
                          "setuid /usr/bin/fusermount3), or add its directory to PATH");
  }
  struct stat st = {};
  struct statvfs fs;
  if (::stat(path.c_str(), &st) != 0 || st.st_uid != 0 || (st.st_mode & S_ISUID) == 0) {
    return Check::Problem(
        "fusermount3",
        path + " is not setuid root (mode " + Mode(st.st_mode) + ", owner uid " +
            std::to_string(st.st_uid) + ")",
        "ask your site's administrators to run: chown root " + path + " && chmod u+s " + path);
  }
  if (::statvfs(path.c_str(), &fs) == 0 && (fs.f_flag & ST_NOSUID) != 0) {
    return Check::Problem("fusermount3",
                          path + " is setuid root but its file system is mounted nosuid",
                          "ask your site's administrators for a fusermount3 on a file system "
                          "mounted without nosuid");
  }
  return Check::Ok("fusermount3", path + " is setuid root");
}

Check CheckAllowOther(const Context& ctx) {
  if (ctx.config_refused && !ctx.options.allow_other) {
    return Check::Skipped("allow_other", "the config did not load: allow_other unknown");
  }
  const bool asked = ctx.options.allow_other || ctx.config.fuse.allow_other;
  if (!asked) {
    return Check::Ok("allow_other",
                     "not asked for (allow_other is false; other users will not see the mount)");
  }
  const std::string by = ctx.config.fuse.allow_other ? "allow_other: true in " + ctx.options.config
                                                     : std::string("--allow-other");
  if (ctx.root) return Check::Ok("allow_other", "asked for (" + by + "); root needs no fuse.conf");
  auto text = ReadText(kFuseConf);
  if (text.ok() && FuseConfAllowsOther(*text)) {
    return Check::Ok("allow_other",
                     "asked for (" + by + ") and " + kFuseConf + " has user_allow_other");
  }
  return Check::Problem("allow_other",
                        "asked for (" + by + "), but " + kFuseConf +
                            (text.ok() ? " has no line user_allow_other" : " cannot be read") +
                            ": fusermount3 refuses the mount",
                        std::string("ask your site's administrators to add the line "
                                    "user_allow_other to ") +
                            kFuseConf + ", or set allow_other: false in the config");
}

Check CheckFuseProtocol(const Context& ctx) {
  const char* tmp = std::getenv("TMPDIR");
  std::string dir = std::string(tmp && *tmp ? tmp : "/tmp") + "/clairfs-doctor.XXXXXX";
  if (::mkdtemp(dir.data()) == nullptr) {
    const int e = errno;
    return Check::Problem(
        "fuse_protocol",
        "cannot create a directory to try a mount on (" + dir + "): " + std::strerror(e),
        "set TMPDIR to a directory of yours that is writable");
  }
  auto probe = fs::ProbeFuseMount(dir, std::chrono::seconds(10));
  ::rmdir(dir.c_str());
  if (!probe.ok()) {
    return Check::Problem("fuse_protocol", "a trial mount failed: " + probe.status().message(),
                          ctx.root ? "ask your site's administrators to allow FUSE mounts in "
                                     "jobs (the fuse module loaded, /dev/fuse in the job's "
                                     "cgroup, mounting allowed in the job's container)"
                                   : std::string(kAskFuse) + ", with fuse3's setuid fusermount3");
  }
  return JudgeFuseProtocol(probe->proto_major, probe->proto_minor);
}

}  // namespace clairfs::doctor
