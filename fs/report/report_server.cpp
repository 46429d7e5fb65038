#include "fs/report/report_server.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdio>

#include "base/log.hpp"
#include "base/thread_name.hpp"

namespace clairfs::fs {
namespace {

constexpr size_t kReadChunk = 64 << 10;

std::string RandomHex() {
  uint64_t v = 0;
  if (::getrandom(&v, sizeof v, 0) != static_cast<ssize_t>(sizeof v)) {
    // No entropy source: time and address still make a collision unlikely.
    v = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
        reinterpret_cast<uintptr_t>(&v);
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(v));
  return hex;
}

}  // namespace

ReportServer::ReportServer(ReportedOrders* orders, ReportLimits limits)
    : orders_(orders), limits_(limits) {}

ReportServer::~ReportServer() { Stop(); }

Status ReportServer::Start() {
  if (thread_.joinable()) return Status::InvalidArgument("report server: started twice");
  if (listen_fd_ < 0) CLAIRFS_RETURN_IF_ERROR(Listen());
  thread_ = std::jthread([this](std::stop_token stop) { Run(stop); });
  return Status::Ok();
}

Status ReportServer::Listen() {
  if (listen_fd_ >= 0) return Status::InvalidArgument("report server: already listening");
  const std::string abstract = "clairfs-report." + std::to_string(::getpid()) + "." + RandomHex();
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  addr.sun_path[0] = '\0';  // the abstract namespace: no path, nothing to clean up
  abstract.copy(addr.sun_path + 1, sizeof addr.sun_path - 1);
  const auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + abstract.size());

  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::FromErrno(errno, "report server: socket");
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), len) != 0 || ::listen(fd, 64) != 0) {
    const int err = errno;
    ::close(fd);
    return Status::FromErrno(err, "report server: bind/listen @" + abstract);
  }
  const int wake = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake < 0) {
    const int err = errno;
    ::close(fd);
    return Status::FromErrno(err, "report server: eventfd");
  }
  listen_fd_ = fd;
  wake_fd_ = wake;
  name_ = "@" + abstract;
  return Status::Ok();
}

void ReportServer::Stop() {
  if (thread_.joinable()) {
    thread_.request_stop();
    const uint64_t one = 1;
    ssize_t n = ::write(wake_fd_, &one, sizeof one);
    (void)n;  // the eventfd cannot be full: one write per Stop
    thread_.join();
  }
  if (listen_fd_ >= 0) ::close(listen_fd_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
  listen_fd_ = wake_fd_ = -1;
}

void ReportServer::Run(std::stop_token stop) {
  NameThread("clairfs-report");
  std::vector<Conn> conns;
  std::vector<pollfd> fds;
  while (!stop.stop_requested()) {
    fds.clear();
    fds.push_back({wake_fd_, POLLIN, 0});
    fds.push_back({listen_fd_, POLLIN, 0});
    for (const Conn& c : conns) fds.push_back({c.fd, POLLIN, 0});
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      Log(LogLevel::kError, "report server: poll: " + Status::FromErrno(errno, "").message());
      break;
    }
    if (fds[0].revents != 0) break;
    // Connections first (the vector's order matches fds from index 2), then
    // the listener, so indices stay valid while some are closed.
    std::vector<Conn> kept;
    kept.reserve(conns.size());
    for (size_t i = 0; i < conns.size(); ++i) {
      if (fds[i + 2].revents != 0 && !Serve(&conns[i])) continue;
      kept.push_back(std::move(conns[i]));
    }
    conns.swap(kept);
    if (fds[1].revents != 0) Accept(&conns);
  }
  for (Conn& c : conns) CloseConn(&c, Status::Ok());
}

void ReportServer::Accept(std::vector<Conn>* conns) {
  for (;;) {
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        Log(LogLevel::kWarn, Status::FromErrno(errno, "report server: accept").message());
      }
      return;
    }
    ucred cred{};
    socklen_t len = sizeof cred;
    const bool own = ::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 &&
                     len == sizeof cred && cred.uid == ::geteuid();
    if (!own || conns->size() >= limits_.max_connections) {
      orders_->CountRefused();  // counted before the peer can see it closed
      ::close(fd);
      continue;
    }
    conns->push_back({fd, orders_->Connect()});
  }
}

bool ReportServer::Serve(Conn* c) {
  char buf[kReadChunk];
  const ssize_t n = ::read(c->fd, buf, sizeof buf);
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return true;
    CloseConn(c, Status::Ok());  // the peer went away (ECONNRESET): not a protocol error
    return false;
  }
  if (n == 0) {
    CloseConn(c, Status::Ok());
    return false;
  }
  Status st = c->orders->Feed(buf, static_cast<size_t>(n));
  if (st.ok()) return true;
  CloseConn(c, st);
  return false;
}

void ReportServer::CloseConn(Conn* c, const Status& why) {
  if (c->orders->Close(why)) {
    Log(LogLevel::kWarn, "order report connection closed: " + why.ToString() +
                             " (later errors are only counted in stats.json)");
  }
  ::close(c->fd);
  c->fd = -1;
  c->orders.reset();
}

}  // namespace clairfs::fs
