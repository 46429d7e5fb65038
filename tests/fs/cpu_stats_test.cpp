#include "fs/stats/cpu_stats.hpp"

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

#include "base/json.hpp"
#include "base/thread_name.hpp"

namespace clairfs::fs {
namespace {

TEST_CASE("ParseTaskStat takes the name between the first '(' and the last ')'", "[cpu_stats]") {
  std::string name;
  uint64_t user = 0, system = 0;
  REQUIRE(
      ParseTaskStat("4242 (a (b) c) S 1 4242 4242 0 -1 4194624 1 0 0 0 377 52 0 0 20 0 "
                    "12 0 100 1000 200",
                    &name, &user, &system));
  CHECK(name == "a (b) c");
  CHECK(user == 377);
  CHECK(system == 52);
}

TEST_CASE("ParseTaskStat refuses a line without its times", "[cpu_stats]") {
  std::string name;
  uint64_t user = 0, system = 0;
  CHECK_FALSE(ParseTaskStat("", &name, &user, &system));
  CHECK_FALSE(ParseTaskStat("12 clairfsd S 1 2", &name, &user, &system));
  CHECK_FALSE(ParseTaskStat("12 (clairfsd) S 1 2 3 4 5 6 7 8 9 10", &name, &user, &system));
  CHECK_FALSE(ParseTaskStat("12 (clairfsd) S 1 2 3 4 5 6 7 8 9 x 4", &name, &user, &system));
}

TEST_CASE("ThreadCpuByName sums live threads by name, with their CPU time", "[cpu_stats]") {
  std::atomic<bool> stop{false};
  std::atomic<int> ready{0};
  auto burn = [&] {
    NameThread("cpu-test-burn");
    ready++;
    volatile uint64_t x = 0;
    while (!stop.load(std::memory_order_relaxed)) x = x + 1;
  };
  std::thread a(burn), b(burn);
  while (ready.load() < 2) std::this_thread::yield();
  // The kernel accounts in ticks (10 ms at 100 Hz): burn until both show.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  ThreadCpu burners;
  while (std::chrono::steady_clock::now() < deadline) {
    for (const ThreadCpu& t : ThreadCpuByName()) {
      if (t.name == "cpu-test-burn") burners = t;
    }
    if (burners.user_s + burners.system_s >= 0.1) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  stop = true;
  a.join();
  b.join();
  CHECK(burners.count == 2);
  CHECK(burners.user_s + burners.system_s >= 0.1);
  bool gone = true;
  for (const ThreadCpu& t : ThreadCpuByName()) gone = gone && t.name != "cpu-test-burn";
  CHECK(gone);  // ended threads leave the list (their time stays in the totals)
}

TEST_CASE("WriteCpuStats writes the totals and one entry per thread name", "[cpu_stats]") {
  JsonWriter w;
  w.BeginObject();
  WriteCpuStats(w);
  w.EndObject();
  const std::string json = w.str();
  CHECK(json.find("\"user_s\"") != std::string::npos);
  CHECK(json.find("\"system_s\"") != std::string::npos);
  CHECK(json.find("\"threads\"") != std::string::npos);
  CHECK(json.find("\"name\"") != std::string::npos);  // this test's own thread at least
}

}  // namespace
}  // namespace clairfs::fs
