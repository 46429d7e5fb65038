#include "fs/fuse/fuse_adapter.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string_view>
#include <thread>
#include <vector>

#include "base/log.hpp"
#include "fs/fuse/fuse_ops.hpp"
#include "fs/fuse/mount_tuning.hpp"
#include "fs/fuse/spin_window.hpp"

namespace clairfs::fs {
namespace {

std::string MountOptions(const FuseOptions& c) {
  std::string fsname = "clairfs:" + c.dataset;
  for (char& ch : fsname) {
    if (ch == ',' || ch == '\\') ch = '_';  // option separators
  }
  std::string o = std::string(c.writable ? "rw" : "ro") +
                  ",default_permissions,auto_unmount,subtype=clairfs,fsname=" + fsname;
  if (c.allow_other) o += ",allow_other";
  return o;
}

// See ReserveAutoUnmountSlot.
int reserved_slot = -1;

// Our socketpair ends among the open descriptors (AF_UNIX stream sockets
// whose peer credentials are this process).
std::set<int> OwnSocketPairEnds() {
  std::set<int> out;
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return out;
  const int self = dirfd(dir);
  while (dirent* e = ::readdir(dir)) {
    const int fd = std::atoi(e->d_name);
    if (fd == self || e->d_name[0] == '.') continue;
    // The link's text, not fstat: other threads (staging, prefetch) open and
    // close files meanwhile, and only sockets are asked anything.
    char link[64];
    const std::string at = std::string("/proc/self/fd/") + e->d_name;
    const ssize_t n = ::readlink(at.c_str(), link, sizeof link - 1);
    if (n <= 0 || std::string_view(link, n).substr(0, 7) != "socket:") continue;
    int type = 0, domain = 0;
    socklen_t len = sizeof type;
    ucred cred{};
    socklen_t clen = sizeof cred;
    if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0 && type == SOCK_STREAM &&
        (len = sizeof domain, ::getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len)) == 0 &&
        domain == AF_UNIX && ::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) == 0 &&
        cred.pid == ::getpid()) {
      out.insert(fd);
    }
  }
  ::closedir(dir);
  return out;
}

// Moves libfuse's end of the socket to fusermount3's auto-unmount helper
// (created by the mount, `before` = such sockets before it) onto the reserved
// low descriptor. Why: the helper unmounts when that socket closes, but only
// if opening the mount root then fails with ENOTCONN. When the daemon is
// killed, the kernel releases its descriptors from the highest number down;
// libfuse's socket end sits above the /dev/fuse descriptor it received, so it
// closed first and the helper's open could reach a connection not yet aborted
// (it then fails with ECONNABORTED, the helper takes the file system for alive
// and leaves a dead mount: seen under load). Below every /dev/fuse descriptor,
// the socket closes last, after the connection is gone.
void MoveAutoUnmountSocket(const std::set<int>& before) {
  if (reserved_slot < 0) return;
  std::vector<int> fresh;
  for (int fd : OwnSocketPairEnds()) {
    if (before.count(fd) == 0) fresh.push_back(fd);
  }
  if (fresh.size() != 1) {
    Log(LogLevel::kDebug, "auto-unmount socket not found (" + std::to_string(fresh.size()) +
                              " candidates); left where libfuse put it");
    return;
  }
  if (::dup3(fresh[0], reserved_slot, O_CLOEXEC) < 0) return;
  ::close(fresh[0]);
  reserved_slot = -1;
}

// SIGTERM, SIGINT and SIGHUP ignored from here on (see SessionSteps::Close).
void IgnoreStopSignals() {
  struct sigaction ignore = {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) ::sigaction(sig, &ignore, nullptr);
}

// Stop signals of the single reading thread's loop (see ReadAndAnswer). The
// handler may run on any thread (MPI's own threads included), so what it
// reads is atomic (lock-free: safe in a handler).
std::atomic<fuse_session*> g_stopping_session{nullptr};
std::atomic<int> g_stop_fd{-1};

extern "C" void OnStopSignal(int sig) {
  const int saved_errno = errno;  // the interrupted code may be reading it
  if (fuse_session* se = g_stopping_session.load(std::memory_order_acquire)) {
    fuse_session_exit(se);  // sets a flag: async-signal-safe
  }
  const int fd = g_stop_fd.load(std::memory_order_acquire);
  if (fd >= 0) {
    const char byte = static_cast<char>(sig);
    const ssize_t n = ::write(fd, &byte, 1);  // the pipe is non-blocking
    (void)n;
  }
  errno = saved_errno;
}

// fuse_threads 1: this thread reads each request and answers it, with no
// hand-off (libfuse's multi-threaded loop reads in a worker while the main
// thread waits). A stop must not be lost between looking for it and
// blocking (fuse_session_loop can block in read() when the signal came just
// before), so the thread sleeps in poll() on /dev/fuse and on a pipe that
// SIGTERM, SIGINT and SIGHUP write to, and reads /dev/fuse only when a
// request is there. Before it sleeps it keeps looking (poll with no timeout,
// again and again) for as long as `spin` says: a request that finds it awake
// is answered without waking a sleeping CPU, which here cost more than the
// rest of the round trip (docs/benchmarks.md). Returns 0 once unmounted or
// stopped, -errno on a failure.
int ReadAndAnswer(fuse_session* se, SpinWindow spin, Stats* stats) {
  // The pipe is never closed: a handler already running on another thread
  // when the loop ends may still write to it, and a closed number could by
  // then belong to a file that byte would land in. One per process.
  static int stop_pipe[2] = {-1, -1};
  if (stop_pipe[0] < 0 && ::pipe2(stop_pipe, O_CLOEXEC | O_NONBLOCK) != 0) return -errno;
  g_stop_fd.store(stop_pipe[1], std::memory_order_release);
  g_stopping_session.store(se, std::memory_order_release);
  struct sigaction on_stop = {};
  on_stop.sa_handler = OnStopSignal;
  sigemptyset(&on_stop.sa_mask);
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) ::sigaction(sig, &on_stop, nullptr);

  using Clock = std::chrono::steady_clock;
  pollfd fds[2] = {{fuse_session_fd(se), POLLIN, 0}, {stop_pipe[0], POLLIN, 0}};
  fuse_buf buf = {};
  int rc = 0;
  while (!fuse_session_exited(se)) {
    const auto idle_from = Clock::now();
    bool found_looking = false;
    if (spin.current().count() > 0) {
      const auto until = idle_from + spin.current();
      auto now = idle_from;
      while (!(found_looking = ::poll(fds, 2, 0) > 0) && (now = Clock::now()) < until) {
      }
      Stats::Add(stats->spin_ns, std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     (found_looking ? Clock::now() : now) - idle_from)
                                     .count());
    }
    if (!found_looking && ::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      rc = -errno;
      break;
    }
    if (spin.max().count() > 0) {
      spin.Observe(std::chrono::duration_cast<SpinWindow::us>(Clock::now() - idle_from),
                   found_looking);
      if (found_looking) Stats::Add(stats->found_awake, 1);
    }
    if (fds[1].revents != 0) break;
    const int got = fuse_session_receive_buf(se, &buf);
    if (got == -EINTR || got == -EAGAIN) continue;
    if (got <= 0) {  // 0: unmounted (libfuse turns ENODEV into 0)
      rc = got;
      break;
    }
    fuse_session_process_buf(se, &buf);
  }
  std::free(buf.mem);
  // From here the signals are ignored, as ServeFuse wants them, and the
  // session (destroyed soon) is no longer the handler's.
  IgnoreStopSignals();
  g_stopping_session.store(nullptr, std::memory_order_release);
  return rc;
}

// The session's set-up steps, undone in reverse order by Close() or the
// destructor, whichever step was the last to succeed: unmount, then the
// signal handlers, then the session (which closes the device).
class SessionSteps {
 public:
  SessionSteps(fuse_args* args, const fuse_lowlevel_ops& ops, void* userdata)
      : se_(fuse_session_new(args, &ops, sizeof ops, userdata)) {}
  SessionSteps(const SessionSteps&) = delete;
  SessionSteps& operator=(const SessionSteps&) = delete;
  ~SessionSteps() { Close(); }

  fuse_session* get() const { return se_; }
  bool InstallSignalHandlers() { return handlers_ = fuse_set_signal_handlers(se_) == 0; }
  bool Mount(const std::string& at) { return mounted_ = fuse_session_mount(se_, at.c_str()) == 0; }

  void Close() {
    if (se_ == nullptr) return;
    if (mounted_) fuse_session_unmount(se_);
    if (handlers_) {
      // From here the daemon is stopping, which is all a SIGTERM, SIGINT or
      // SIGHUP could ask; launchers often send SIGTERM twice (MPICH's hydra:
      // from the proxy and from a forwarding wrapper). Left at their default,
      // a second one would kill this rank before its bounded shutdown with its
      // peers and leave them waiting for it. Ignored first, so the removal
      // leaves them so.
      IgnoreStopSignals();
      fuse_remove_signal_handlers(se_);
    }
    fuse_session_destroy(se_);
    se_ = nullptr;
  }

 private:
  fuse_session* se_;
  bool handlers_ = false;
  bool mounted_ = false;
};

}  // namespace

void ReserveAutoUnmountSlot() {
  if (reserved_slot < 0) reserved_slot = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
}

Status ServeFuse(Vfs* vfs, const FuseOptions& options, FusePageCachePusher* pusher,
                 std::function<Status()> start, std::function<void()> on_mounted) {
  Session session{vfs, options, {}};
  const fuse_lowlevel_ops ops = MakeOps();
  const std::string opts = MountOptions(options);
  char arg0[] = "clairfsd", arg1[] = "-o";
  std::vector<char> arg2(opts.begin(), opts.end());
  arg2.push_back('\0');
  char* argv[] = {arg0, arg1, arg2.data(), nullptr};
  fuse_args args = FUSE_ARGS_INIT(3, argv);

  SessionSteps steps(&args, ops, &session);
  fuse_session* se = steps.get();
  if (se == nullptr) return Status::InvalidArgument("cannot create the FUSE session");
  // libfuse only takes over signals left at their default; a daemon started in
  // the background of a script inherits SIGINT ignored, and must still stop.
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  if (!steps.InstallSignalHandlers()) return Status::IOError("cannot install signal handlers");
  const std::set<int> sockets_before = OwnSocketPairEnds();
  if (!steps.Mount(options.mount)) {
    return Status::IOError("cannot mount at " + options.mount +
                           " (is /dev/fuse usable, fusermount3 installed, the directory empty?)");
  }
  MoveAutoUnmountSocket(sockets_before);
  if (start) CLAIRFS_RETURN_IF_ERROR(start());
  Log(LogLevel::kInfo, "mounted " + options.dataset + " at " + options.mount);
  if (pusher != nullptr) pusher->Attach(se);
  // The kernel clamps read-ahead to 128 KiB when it processes the INIT reply,
  // so the larger window is set once that has happened (and checked).
  std::jthread tuner;
  if (options.read_ahead != 0) {
    tuner = std::jthread([&session, &options](std::stop_token stop) {
      Status last = Status::Ok();
      for (int attempt = 0; attempt < 100 && !stop.stop_requested(); ++attempt) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        if (!session.initialized.load()) continue;
        last = SetMountReadAhead(options.mount, options.read_ahead);
        if (!last.ok()) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        if (MountReadAhead(options.mount) == options.read_ahead) {
          Log(LogLevel::kDebug, "read_ahead set to " + std::to_string(options.read_ahead));
          return;
        }
      }
      Log(LogLevel::kWarn, "read_ahead not applied: " + last.ToString());
    });
  }
  // The mount answers as soon as the loop below runs.
  std::thread hook;
  if (on_mounted) hook = std::thread(std::move(on_mounted));
  // Requests are answered by the threads reading them; READs that must wait
  // go to `waiting` (its queue bound is back-pressure: past it, the reading
  // thread answers the READ itself).
  WorkPool waiting("clairfs-read", options.threads, 256);
  session.waiting_reads = &waiting;
  const std::unique_ptr<fuse_loop_config, void (*)(fuse_loop_config*)> loop(fuse_loop_cfg_create(),
                                                                            fuse_loop_cfg_destroy);
  fuse_loop_cfg_set_clone_fd(loop.get(), options.clone_fd ? 1 : 0);
  fuse_loop_cfg_set_max_threads(loop.get(), options.fuse_threads);
  const int rc = options.fuse_threads == 1
                     ? ReadAndAnswer(se, SpinWindow(SpinWindow::us(options.spin_us)), vfs->stats())
                     : fuse_session_loop_mt(se, loop.get());
  // Stopping: READs still queued are dropped (the kernel fails them when the
  // device closes below); the ones being answered finish first, within
  // peer_timeout_ms, so no reply reaches a destroyed session.
  waiting.Stop(false);
  if (tuner.joinable()) {
    tuner.request_stop();
    tuner.join();
  }
  if (pusher != nullptr) pusher->Detach();
  steps.Close();  // closes the device: a call of the hook still waiting fails
  if (hook.joinable()) hook.join();
  Log(LogLevel::kInfo, "unmounted " + options.mount);
  if (rc < 0) return Status::FromErrno(-rc, "FUSE session loop");
  return Status::Ok();
}

}  // namespace clairfs::fs
