// ReportServer over a real abstract-namespace socket: frames in pieces, a bad
// connection closed alone, Stop with clients connected, the connection limit,
// another user refused.
#include "fs/report/report_server.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstddef>
#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "tests/fs/report/report_frames.hpp"
#include "tests/support/format_fixture.hpp"

namespace clairfs::fs {
namespace {

using namespace testing;
namespace ft = format::testing;
using std::chrono::milliseconds;

std::shared_ptr<const format::Manifest> TinyManifest() {
  ft::DatasetSpec spec;
  spec.files.push_back({"a.jpg", ft::TextBytes(10, 1)});
  spec.files.push_back({"b.jpg", ft::TextBytes(10, 2)});
  auto ds = ft::BuildDataset(spec);
  REQUIRE(ds.ok());
  auto m = format::Manifest::Parse(ds->manifest, "test manifest");
  REQUIRE(m.ok());
  return *m;
}

// Polls `cond` for up to 5 s.
template <typename F>
bool Eventually(F cond) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::chrono::steady_clock::now() < deadline) {
    if (cond()) return true;
    std::this_thread::sleep_for(milliseconds(2));
  }
  return cond();
}

// Connects to "@name"; -1 on failure.
int Dial(const std::string& name) {
  if (name.size() < 2 || name[0] != '@') return -1;
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  name.copy(addr.sun_path + 1, name.size() - 1, 1);
  const auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name.size());
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), len) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

bool SendAll(int fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

// True when the server closed `fd` (EOF or reset) within 5 s.
bool ClosedByServer(int fd) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, 5000) != 1) return false;
  char c;
  return ::recv(fd, &c, 1, 0) <= 0;
}

// Nothing from the server for 100 ms: still open.
bool StillOpen(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 100) == 0;
}

struct Fd {
  explicit Fd(int f) : fd(f) {}
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  int fd;
};

std::string StatsOf(const ReportedOrders& orders) {
  JsonWriter w;
  w.BeginObject();
  orders.WriteStats(w);
  w.EndObject();
  return w.str();
}

TEST_CASE("the report server takes frames sent in pieces over its abstract socket", "[report]") {
  ReportedOrders orders(TinyManifest());
  ReportServer server(&orders, ReportLimits{});
  CHECK(server.name().empty());
  REQUIRE(server.Start().ok());
  CHECK(std::regex_match(
      server.name(),
      std::regex("@clairfs-report\\." + std::to_string(::getpid()) + "\\.[0-9a-f]{16}")));
  CHECK_FALSE(server.Start().ok());  // once only
  Fd c(Dial(server.name()));
  REQUIRE(c.fd >= 0);
  const std::string bytes = MainHello(77) + TablePathsFrame(1, 0, {"a.jpg", "b.jpg"}) +
                            OrderFrame(1, 0, 0, false, {1}) + OrderFrame(1, 0, 0, true, {0, 1});
  for (size_t at = 0; at < bytes.size(); at += 7) {  // small writes, the server reads as they come
    REQUIRE(SendAll(c.fd, bytes.substr(at, 7)));
    if (at % 28 == 0) std::this_thread::sleep_for(milliseconds(1));
  }
  REQUIRE(Eventually([&] { return orders.SegmentCount(77) == 1; }));
  auto seg = orders.Segment(77, 0);
  REQUIRE(seg.ok());
  CHECK(seg->files.size() == 3);
  CHECK(StillOpen(c.fd));
  const std::string stats = StatsOf(orders);
  CHECK(stats.find("\"frames\":4") != std::string::npos);
  CHECK(stats.find("\"bytes\":" + std::to_string(bytes.size())) != std::string::npos);
}

TEST_CASE("a bad frame closes its own connection only", "[report]") {
  ReportedOrders orders(TinyManifest());
  ReportServer server(&orders, ReportLimits{});
  REQUIRE(server.Start().ok());
  Fd good(Dial(server.name())), bad(Dial(server.name()));
  REQUIRE(good.fd >= 0);
  REQUIRE(bad.fd >= 0);
  REQUIRE(SendAll(good.fd, MainHello(1) + TablePathsFrame(1, 0, {"a.jpg"})));
  REQUIRE(SendAll(bad.fd, MainHello(2) + OrderFrame(1, 0, 0, true, {0}) + Frame(10, "junk")));
  CHECK(ClosedByServer(bad.fd));
  CHECK(StillOpen(good.fd));
  REQUIRE(SendAll(good.fd, OrderFrame(1, 3, 0, true, {0, 0})));
  REQUIRE(Eventually([&] { return orders.SegmentCount(1) == 1; }));
  CHECK(orders.Segment(1, 0)->files.size() == 2);
  CHECK(orders.SegmentCount(2) == 1);  // what the bad connection reported first stays
  const std::string stats = StatsOf(orders);
  CHECK(stats.find("\"connections_closed_bad\":1") != std::string::npos);
  CHECK(stats.find("frame 3: unknown frame type 10") != std::string::npos);
}

TEST_CASE("the report server stops promptly with clients connected", "[report]") {
  ReportedOrders orders(TinyManifest());
  auto server = std::make_unique<ReportServer>(&orders, ReportLimits{});
  REQUIRE(server->Start().ok());
  const std::string name = server->name();
  Fd idle(Dial(name)), midframe(Dial(name));
  REQUIRE(idle.fd >= 0);
  REQUIRE(midframe.fd >= 0);
  REQUIRE(SendAll(midframe.fd, MainHello(3) + OrderFrame(1, 0, 0, false, {0}).substr(0, 10)));
  REQUIRE(Eventually([&] { return StatsOf(orders).find("\"frames\":1") != std::string::npos; }));
  const auto t0 = std::chrono::steady_clock::now();
  server->Stop();
  CHECK(std::chrono::steady_clock::now() - t0 < milliseconds(1000));
  CHECK(ClosedByServer(idle.fd));
  CHECK(ClosedByServer(midframe.fd));
  server->Stop();  // again: nothing to do
  server.reset();
  CHECK(Dial(name) < 0);  // the name is gone with the listener
  CHECK(StatsOf(orders).find("\"connections_open\":0") != std::string::npos);
}

TEST_CASE("the report server closes connections past its limit at accept", "[report]") {
  ReportedOrders orders(TinyManifest());
  ReportLimits limits;
  limits.max_connections = 2;
  ReportServer server(&orders, limits);
  REQUIRE(server.Start().ok());
  Fd a(Dial(server.name())), b(Dial(server.name()));
  REQUIRE(SendAll(a.fd, MainHello(1)));
  REQUIRE(SendAll(b.fd, MainHello(2)));
  REQUIRE(Eventually([&] { return orders.Info(2).has_value() && orders.Info(1).has_value(); }));
  Fd third(Dial(server.name()));
  REQUIRE(third.fd >= 0);  // the kernel accepts into the backlog; the server closes it
  CHECK(ClosedByServer(third.fd));
  CHECK(StillOpen(a.fd));
  CHECK(StillOpen(b.fd));
  CHECK(StatsOf(orders).find("\"connections_refused\":1") != std::string::npos);
  // Once one goes, a new one is kept.
  ::close(a.fd);
  a.fd = -1;
  REQUIRE(Eventually(
      [&] { return StatsOf(orders).find("\"connections_open\":1") != std::string::npos; }));
  Fd fourth(Dial(server.name()));
  REQUIRE(SendAll(fourth.fd, MainHello(4)));
  REQUIRE(Eventually([&] { return orders.Info(4).has_value(); }));
  CHECK(StillOpen(fourth.fd));
}

TEST_CASE("the report server refuses another user's connection", "[report]") {
  if (::geteuid() != 0) {
    WARN("not root: cannot connect as another user here; the check was not exercised");
    return;
  }
  ReportedOrders orders(TinyManifest());
  ReportServer server(&orders, ReportLimits{});
  REQUIRE(server.Start().ok());
  const std::string name = server.name();
  const std::string hello = MainHello(9);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {  // only async-signal-safe calls until _exit
    if (::setresgid(65534, 65534, 65534) != 0 || ::setresuid(65534, 65534, 65534) != 0) _exit(3);
    const int fd = Dial(name);
    if (fd < 0) _exit(4);
    (void)::send(fd, hello.data(), hello.size(), MSG_NOSIGNAL);
    _exit(ClosedByServer(fd) ? 0 : 5);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK_FALSE(orders.Info(9).has_value());
  CHECK(StatsOf(orders).find("\"connections_refused\":1") != std::string::npos);
  CHECK(StatsOf(orders).find("\"connections_accepted\":0") != std::string::npos);
}

}  // namespace
}  // namespace clairfs::fs
