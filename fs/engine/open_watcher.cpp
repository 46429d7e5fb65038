#include "fs/engine/open_watcher.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string_view>

#include "base/log.hpp"
#include "base/thread_name.hpp"

namespace clairfs::fs {
namespace {
constexpr std::chrono::milliseconds kBatchWait{10};
}  // namespace

Result<std::unique_ptr<OpenWatcher>> OpenWatcher::Start(
    const std::string& mount, std::shared_ptr<const format::Manifest> manifest,
    const std::vector<uint8_t>& in_dataset, OnOpenFn on_open) {
  const format::Manifest& m = *manifest;
  if (in_dataset.size() != m.node_count()) {
    return Status::InvalidArgument("open watcher: in_dataset does not match the manifest");
  }
  const int fd = ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  if (fd < 0) return Status::FromErrno(errno, "inotify_init1");
  const int stop_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (stop_fd < 0) {
    const int e = errno;
    ::close(fd);
    return Status::FromErrno(e, "eventfd");
  }
  std::unique_ptr<OpenWatcher> w(
      new OpenWatcher(std::move(manifest), in_dataset, std::move(on_open), fd, stop_fd));
  // A directory is watched once, for the first dataset file found in it.
  std::vector<uint8_t> seen(m.node_count(), 0);
  for (uint32_t node = 0; node < m.node_count(); ++node) {
    if (in_dataset[node] == 0) continue;
    const uint32_t dir = m.node(node).parent;
    if (seen[dir]) continue;
    seen[dir] = 1;
    const std::string rel = m.Path(dir);
    const std::string path = rel.empty() ? mount : mount + "/" + rel;
    const int wd = ::inotify_add_watch(fd, path.c_str(), IN_OPEN | IN_ONLYDIR);
    if (wd < 0) {
      const int e = errno;
      std::string hint = e == ENOSPC ? " (raise fs.inotify.max_user_watches)" : "";
      return Status::FromErrno(e, "inotify watch on " + path + hint);
    }
    w->dirs_[wd] = dir;
  }
  w->thread_ = std::thread([raw = w.get()] {
    NameThread("clairfs-watch");
    raw->Run();
  });
  return w;
}

OpenWatcher::OpenWatcher(std::shared_ptr<const format::Manifest> manifest,
                         std::vector<uint8_t> in_dataset, OnOpenFn on_open, int inotify_fd,
                         int stop_fd)
    : manifest_(std::move(manifest)),
      in_dataset_(std::move(in_dataset)),
      on_open_(std::move(on_open)),
      fd_(inotify_fd),
      stop_fd_(stop_fd) {}

OpenWatcher::~OpenWatcher() {
  Stop();
  ::close(fd_);
  ::close(stop_fd_);
}

void OpenWatcher::Stop() {
  if (!thread_.joinable()) return;
  const uint64_t one = 1;
  if (::write(stop_fd_, &one, sizeof one) < 0) {
    Log(LogLevel::kWarn,
        std::string("open watcher: cannot wake its thread: ") + std::strerror(errno));
  }
  thread_.join();
}

void OpenWatcher::Run() {
  // Aligned for struct inotify_event; room for many events per read().
  alignas(struct inotify_event) char buf[64 * 1024];
  pollfd fds[2] = {{fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
  for (;;) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      Log(LogLevel::kError, std::string("open watcher: poll: ") + std::strerror(errno));
      return;
    }
    if (fds[1].revents != 0) return;
    for (;;) {
      const ssize_t n = ::read(fd_, buf, sizeof buf);
      if (n < 0) {
        if (errno == EINTR) continue;
        if (errno != EAGAIN) {
          Log(LogLevel::kError, std::string("open watcher: read: ") + std::strerror(errno));
          return;
        }
        break;
      }
      Handle(buf, static_cast<size_t>(n));
    }
    // Let the next opens gather in the kernel's queue: one wake-up per batch
    // rather than per open keeps the watcher off the training job's CPUs,
    // and the planner learns of an open at most kBatchWait late.
    pollfd stop = {stop_fd_, POLLIN, 0};
    if (::poll(&stop, 1, static_cast<int>(kBatchWait.count())) > 0) return;
  }
}

void OpenWatcher::Handle(const char* buf, size_t len) {
  for (size_t off = 0; off + sizeof(inotify_event) <= len;) {
    inotify_event ev;
    std::memcpy(&ev, buf + off, sizeof ev);
    const char* name = buf + off + sizeof ev;
    off += sizeof ev + ev.len;
    if (ev.mask & IN_Q_OVERFLOW) {
      overflows_.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    if ((ev.mask & IN_OPEN) == 0 || (ev.mask & IN_ISDIR) != 0 || ev.len == 0) continue;
    auto dir = dirs_.find(ev.wd);
    if (dir == dirs_.end()) continue;
    auto node = manifest_->Lookup(dir->second, std::string_view(name, ::strnlen(name, ev.len)));
    if (!node || in_dataset_[*node] == 0) continue;
    events_.fetch_add(1, std::memory_order_relaxed);
    on_open_(*node);
  }
}

}  // namespace clairfs::fs
