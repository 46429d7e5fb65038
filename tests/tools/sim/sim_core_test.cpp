// The simulator's clock and its shared devices, against cases worked out by
// hand.
#include <catch2/catch.hpp>
#include <random>
#include <string>
#include <vector>

#include "tools/sim/event_loop.hpp"
#include "tools/sim/shared_device.hpp"
#include "tools/sim/sim_config.hpp"

using namespace clairfs::sim;

TEST_CASE("events run in time order, those due together in the order they were scheduled",
          "[sim]") {
  EventLoop loop;
  std::string log;
  loop.After(2, [&] { log += "c"; });
  loop.After(1, [&] {
    log += "a";
    loop.After(0, [&] { log += "b"; });   // after the other event due at 1
    loop.After(-5, [&] { log += "B"; });  // never in the past
  });
  loop.After(1, [&] { log += "A"; });
  CHECK(loop.Run() == 5);
  CHECK(log == "aAbBc");
  CHECK(loop.now() == 2);
  CHECK(loop.pending() == 0);
}

TEST_CASE("a cancelled event does not run, and the others keep their order", "[sim]") {
  EventLoop loop;
  std::string log;
  loop.After(1, [&] { log += "a"; });
  const EventLoop::EventId b = loop.Schedule(1, [&] { log += "b"; });
  const EventLoop::EventId c = loop.Schedule(0.5, [&] {
    log += "c";
    loop.Cancel(b);
    loop.Cancel(b);  // twice: nothing more
  });
  loop.After(1, [&] { log += "d"; });
  loop.After(2, [&] {
    log += "e";
    loop.Cancel(c);                      // ran already: nothing
    loop.After(0, [&] { log += "f"; });  // may reuse a freed slot
  });
  CHECK(loop.Run() == 5);
  CHECK(log == "cadef");
  CHECK(loop.pending() == 0);
}

namespace {
// Issues a transfer of `bytes` at time `at`, recording when it completes.
void At(EventLoop& loop, SharedDevice& d, double at, uint64_t bytes, double* done) {
  loop.After(
      at, [&loop, &d, bytes, done] { d.Transfer(bytes, [&loop, done] { *done = loop.now(); }); });
}
}  // namespace

TEST_CASE("requests in progress share a device equally", "[sim]") {
  EventLoop loop;
  SharedDevice d(&loop, DeviceSpec{.bandwidth = 100});
  double a = -1, b = -1, c = -1;
  SECTION("alone, at full speed") {
    At(loop, d, 0, 100, &a);
    loop.Run();
    CHECK(a == Approx(1.0));
  }
  SECTION("two at once: each at half") {
    At(loop, d, 0, 100, &a);
    At(loop, d, 0, 100, &b);
    loop.Run();
    CHECK(a == Approx(2.0));
    CHECK(b == Approx(2.0));
    CHECK(d.counters().peak_in_progress == 2);
  }
  SECTION("one joining half way") {
    // A alone for 0.5 s (50 B), then both at 50 B/s: A's last 50 B take 1 s
    // (done at 1.5), B has 50 B by then and its last 50 B alone take 0.5 s.
    At(loop, d, 0, 100, &a);
    At(loop, d, 0.5, 100, &b);
    At(loop, d, 10, 0, &c);  // nothing to move: done as it arrives
    loop.Run();
    CHECK(a == Approx(1.5));
    CHECK(b == Approx(2.0));
    CHECK(c == Approx(10.0));
  }
  CHECK(d.counters().busy_seconds == Approx(d.counters().bytes / 100.0));
}

TEST_CASE("small requests are bound by the device's IOPS", "[sim]") {
  EventLoop loop;
  SharedDevice d(&loop, DeviceSpec{.bandwidth = 1e9, .iops = 10});
  std::vector<double> done(5, -1);
  for (double& t : done) At(loop, d, 0, 1, &t);
  loop.Run();
  for (double t : done) CHECK(t == Approx(0.5));  // 5 requests at 10 per second
  CHECK(d.Demand(1) == Approx(0.1));
  CHECK(d.Demand(1000000000) == Approx(1.0));
}

TEST_CASE("a request waits its latency, longer on a busier device, without using it", "[sim]") {
  EventLoop loop;
  SharedDevice d(&loop, DeviceSpec{.bandwidth = 100, .latency = 0.2, .latency_per_request = 0.1});
  double a = -1, b = -1;
  // A joins at 0.2 and has 0.6 s of service by 0.8, when B joins (issued at
  // 0.5 with one request in progress: 0.3 s of latency). They share: A's
  // last 0.4 s take 0.8 s (done at 1.6), B then has 0.4 s and needs 0.6 more.
  At(loop, d, 0, 100, &a);
  At(loop, d, 0.5, 100, &b);
  loop.Run();
  CHECK(a == Approx(1.6));
  CHECK(b == Approx(2.2));
  CHECK(d.counters().busy_seconds == Approx(2.0));  // idle from 0 to 0.2
}

TEST_CASE("a device's work adds up: every request completes once, its bytes counted", "[sim]") {
  EventLoop loop;
  SharedDevice d(
      &loop,
      DeviceSpec{.bandwidth = 1000, .iops = 50, .latency = 0.01, .latency_per_request = 0.001});
  std::mt19937 rng(7);
  uint64_t bytes = 0;
  double demand = 0;
  int completed = 0;
  for (int i = 0; i < 500; ++i) {
    const uint64_t n = rng() % 200;
    const double at = (rng() % 10000) / 100.0;
    bytes += n;
    demand += d.Demand(n);
    loop.After(at, [&d, &completed, n] { d.Transfer(n, [&completed] { completed++; }); });
  }
  loop.Run();
  CHECK(completed == 500);
  CHECK(d.counters().requests == 500);
  CHECK(d.counters().bytes == bytes);
  // Work-conserving: whenever a request needs a budget it is spent at full
  // rate, so the device is busy at least as long as each budget's total and
  // at most as long as the requests' demands one after another.
  CHECK(d.counters().busy_seconds >= Approx(bytes / 1000.0).epsilon(1e-9));
  CHECK(d.counters().busy_seconds >= Approx(500 / 50.0).epsilon(1e-9));
  CHECK(d.counters().busy_seconds <= Approx(demand).epsilon(1e-9));
}

TEST_CASE("small and large requests take different budgets of a device", "[sim]") {
  // 100 B/s and 10 IOPS. One request of 100 B (1 s of bytes, 0.1 s of
  // requests) and five of 1 B (0.01 s of bytes, 0.1 s of requests each),
  // all at 0. Requests: six share it, each has its 0.1 s at 0.6. Bytes: six
  // share it until the small ones have their 0.01 s at 0.06, then the large
  // one is alone for its last 0.99 s: done at 1.05 (with one budget of
  // device time, max(bytes, requests), it would be 1.5).
  EventLoop loop;
  SharedDevice d(&loop, DeviceSpec{.bandwidth = 100, .iops = 10});
  double large = -1;
  std::vector<double> small(5, -1);
  At(loop, d, 0, 100, &large);
  for (double& t : small) At(loop, d, 0, 1, &t);
  loop.Run();
  CHECK(large == Approx(1.05));
  for (double t : small) CHECK(t == Approx(0.6));
  CHECK(d.counters().busy_seconds == Approx(1.05));
  CHECK(d.counters().peak_in_progress == 6);
}

TEST_CASE("a client's requests share its own bandwidth, and the device's with everyone", "[sim]") {
  // 100 B/s in all, 40 B/s per client; 40 B from client 0 twice and from
  // client 1 once, at 0. The device's budget: three requests of 0.4 s each,
  // all had at 1.2. Client 0's: two of 1 s each, had at 2.0; client 1's: 1 s,
  // at 1.0. A request is done when it has had every budget.
  EventLoop loop;
  SharedDevice d(&loop, DeviceSpec{.bandwidth = 100, .client_bandwidth = 40});
  std::vector<double> done(3, -1);
  const std::vector<int> client = {0, 0, 1};
  for (int i = 0; i < 3; ++i) {
    d.Transfer(
        40, [&loop, &done, i] { done[i] = loop.now(); }, client[i]);
  }
  double anonymous = -1;  // no client: the device's budget only, after the others
  loop.After(5, [&] { d.Transfer(40, [&] { anonymous = loop.now(); }); });
  loop.Run();
  CHECK(done[0] == Approx(2.0));
  CHECK(done[1] == Approx(2.0));
  CHECK(done[2] == Approx(1.2));
  CHECK(anonymous == Approx(5.4));
  auto c = ParseSimConfig("shared_fs: {bandwidth: 1G, node_bandwidth: 512M}");
  REQUIRE(c.ok());
  CHECK(c->shared_fs.client_bandwidth == Approx(512 << 20));
}
