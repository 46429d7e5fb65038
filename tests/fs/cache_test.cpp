// RamCache and LruPolicy: budget, eviction order, single flight, failures.
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <random>
#include <thread>
#include <vector>

#include "fs/cache/cache_policy.hpp"
#include "fs/cache/ram_cache.hpp"

namespace clairfs::fs {
namespace {

RamCache::Loader Make(size_t n, std::atomic<int>* calls = nullptr) {
  return [n, calls]() -> Result<BlockRef> {
    if (calls != nullptr) ++*calls;
    return BlockRef(std::make_shared<Block>(n));
  };
}

TEST_CASE("LRU evicts the least recently used block", "[cache]") {
  RamCache cache(300, std::make_unique<LruPolicy>());
  for (uint32_t i = 0; i < 3; ++i) REQUIRE(cache.GetOrLoad(i, Make(100)).ok());
  REQUIRE(cache.Lookup(0) != nullptr);  // 0 is now the most recent; 1 the least
  REQUIRE(cache.GetOrLoad(3, Make(100)).ok());
  CHECK(cache.Lookup(1) == nullptr);
  CHECK(cache.Lookup(0) != nullptr);
  CHECK(cache.Lookup(2) != nullptr);
  CHECK(cache.Lookup(3) != nullptr);
  CacheStats s = cache.Snapshot();
  CHECK(s.evictions == 1);
  CHECK(s.bytes == 300);
}

TEST_CASE("the byte budget is never exceeded", "[cache]") {
  const uint64_t capacity = 10000;
  RamCache cache(capacity, std::make_unique<LruPolicy>());
  std::mt19937 rng(7);
  for (int i = 0; i < 2000; ++i) {
    const BlockKey key = rng() % 200;
    const size_t size = 1 + rng() % 3000;
    RamCache::Outcome outcome;
    auto block = cache.GetOrLoad(key, Make(size), &outcome);
    REQUIRE(block.ok());
    REQUIRE(cache.Snapshot().bytes <= capacity);
  }
  CacheStats s = cache.Snapshot();
  CHECK(s.evictions > 0);
  CHECK(s.hits + s.misses == 2000);
}

TEST_CASE("a block larger than the budget is served but not kept", "[cache]") {
  RamCache cache(1000, std::make_unique<LruPolicy>());
  REQUIRE(cache.GetOrLoad(1, Make(500)).ok());
  auto big = cache.GetOrLoad(2, Make(5000));
  REQUIRE(big.ok());
  CHECK((*big)->size == 5000);
  CHECK(cache.Lookup(2) == nullptr);
  CHECK(cache.Lookup(1) != nullptr);  // nothing was evicted for it
  CHECK(cache.Snapshot().rejected == 1);
}

TEST_CASE("concurrent misses on one block load it once", "[cache]") {
  RamCache cache(1 << 20, std::make_unique<LruPolicy>());
  std::atomic<int> calls{0};
  std::atomic<int> waited{0};
  auto slow = [&calls]() -> Result<BlockRef> {
    ++calls;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    return BlockRef(std::make_shared<Block>(64));
  };
  std::vector<std::thread> threads;
  std::vector<const Block*> seen(8);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      RamCache::Outcome o;
      auto b = cache.GetOrLoad(42, slow, &o);
      if (o == RamCache::Outcome::kWaited) ++waited;
      seen[t] = b.ok() ? b->get() : nullptr;
    });
  }
  for (auto& t : threads) t.join();
  CHECK(calls == 1);
  CHECK(waited >= 1);
  for (const Block* b : seen) CHECK(b == seen[0]);
}

TEST_CASE("a failed load reaches every waiter and is not cached", "[cache]") {
  RamCache cache(1 << 20, std::make_unique<LruPolicy>());
  std::atomic<int> calls{0};
  auto failing = [&calls]() -> Result<BlockRef> {
    ++calls;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return Status::Corruption("f (partition 0): checksum mismatch");
  };
  std::vector<std::thread> threads;
  std::atomic<int> errors{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      auto b = cache.GetOrLoad(9, failing);
      if (!b.ok() && b.status().err() == EIO) ++errors;
    });
  }
  for (auto& t : threads) t.join();
  CHECK(errors == 4);
  CHECK(cache.Lookup(9) == nullptr);
  auto again = cache.GetOrLoad(9, failing);
  CHECK_FALSE(again.ok());
  CHECK(calls >= 2);  // retried, not remembered
}

TEST_CASE("evicted blocks stay valid for readers holding them", "[cache]") {
  RamCache cache(100, std::make_unique<LruPolicy>());
  auto held = cache.GetOrLoad(1, Make(100));
  REQUIRE(held.ok());
  (*held)->data[0] = 'x';
  REQUIRE(cache.GetOrLoad(2, Make(100)).ok());  // evicts 1
  CHECK(cache.Lookup(1) == nullptr);
  CHECK((*held)->data[0] == 'x');
}

}  // namespace
}  // namespace clairfs::fs
