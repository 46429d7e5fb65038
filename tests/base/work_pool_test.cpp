// WorkPool: order, the queue bound, and what Stop does with queued tasks.
#include "base/work_pool.hpp"

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <future>
#include <mutex>
#include <vector>

using namespace clairfs;

TEST_CASE("a one-thread pool runs tasks in the order they were submitted", "[pool]") {
  WorkPool pool("test-pool", 1, 100);
  std::mutex mu;
  std::vector<int> order;
  for (int i = 0; i < 50; ++i) {
    REQUIRE(pool.TrySubmit([&, i] {
      std::lock_guard<std::mutex> lock(mu);
      order.push_back(i);
    }));
  }
  pool.Stop(true);
  REQUIRE(order.size() == 50);
  for (int i = 0; i < 50; ++i) CHECK(order[i] == i);
}

TEST_CASE("the queue bound refuses tasks; Stop runs or drops the queued ones", "[pool]") {
  for (bool run_queued : {true, false}) {
    WorkPool pool("test-pool", 2, 3);
    std::promise<void> release;
    std::shared_future<void> gate = release.get_future().share();
    std::atomic<int> started{0}, ran{0};
    // Two tasks hold both workers until released...
    for (int i = 0; i < 2; ++i) {
      REQUIRE(pool.TrySubmit([&] {
        started++;
        gate.wait();
        ran++;
      }));
    }
    while (started < 2) std::this_thread::yield();
    // ...so three more wait in the queue, and a fourth is refused.
    for (int i = 0; i < 3; ++i) REQUIRE(pool.TrySubmit([&] { ran++; }));
    CHECK(pool.queued() == 3);
    CHECK_FALSE(pool.TrySubmit([&] { ran++; }));
    std::thread stopper([&] { pool.Stop(run_queued); });
    // Dropping: the workers are still held, so the queue empties only by Stop.
    if (!run_queued) {
      while (pool.queued() != 0) std::this_thread::yield();
    }
    release.set_value();
    stopper.join();
    CHECK(ran == (run_queued ? 5 : 2));           // the running ones always finish
    CHECK_FALSE(pool.TrySubmit([&] { ran++; }));  // stopped: refused
  }
}

TEST_CASE("many threads submitting to many workers run every task once", "[pool]") {
  WorkPool pool("test-pool", 4, 1 << 20);
  std::atomic<int> ran{0};
  std::vector<std::thread> submitters;
  for (int t = 0; t < 4; ++t) {
    submitters.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) {
        if (!pool.TrySubmit([&] { ran++; })) ran++;  // refused: run it here
      }
    });
  }
  for (auto& t : submitters) t.join();
  pool.Stop(true);
  CHECK(ran == 4000);
}
