// RamCache and LruPolicy: budget, eviction order, single flight, failures.
#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <random>
#include <set>
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

// The cached block or null; counts as a hit (as a read would).
BlockRef Cached(RamCache& cache, BlockKey key) {
  std::vector<BlockRef> out;
  return cache.LookupAll({key}, &out) ? out[0] : nullptr;
}

TEST_CASE("LRU evicts the least recently used block", "[cache]") {
  RamCache cache(300, std::make_unique<LruPolicy>());
  for (uint32_t i = 0; i < 3; ++i) REQUIRE(cache.GetOrLoad(i, Make(100)).ok());
  REQUIRE(Cached(cache, 0) != nullptr);  // 0 is now the most recent; 1 the least
  REQUIRE(cache.GetOrLoad(3, Make(100)).ok());
  CHECK(Cached(cache, 1) == nullptr);
  CHECK(Cached(cache, 0) != nullptr);
  CHECK(Cached(cache, 2) != nullptr);
  CHECK(Cached(cache, 3) != nullptr);
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
  CHECK(Cached(cache, 2) == nullptr);
  CHECK(Cached(cache, 1) != nullptr);  // nothing was evicted for it
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
  CHECK(Cached(cache, 9) == nullptr);
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
  CHECK(Cached(cache, 1) == nullptr);
  CHECK((*held)->data[0] == 'x');
}

// An owner keeping the files in `keep`, naming `drop` on the next decision.
class FakeOwner final : public FileOwner {
 public:
  bool Keep(uint32_t node, std::vector<uint32_t>* out) override {
    ++asked;
    out->insert(out->end(), drop.begin(), drop.end());
    drop.clear();
    return keep.count(node) != 0;
  }
  void Dropped(uint32_t node) override { dropped.push_back(node); }
  std::set<uint32_t> keep;
  std::vector<uint32_t> drop;
  std::vector<uint32_t> dropped;
  int asked = 0;
};

TEST_CASE("with an owner, only blocks of files it keeps stay, and it never evicts on its own",
          "[cache]") {
  RamCache cache(1000, std::make_unique<LruPolicy>());
  REQUIRE(cache.GetOrLoad(MakeBlockKey(9, 0), Make(100)).ok());
  FakeOwner owner;
  owner.keep = {1, 2};
  cache.SetOwner(&owner);
  CHECK(cache.Snapshot().bytes == 0);  // held before the owner: dropped
  CHECK(cache.Snapshot().owned);
  for (uint32_t node = 1; node <= 3; ++node) {
    for (uint32_t i = 0; i < 2; ++i)
      REQUIRE(cache.GetOrLoad(MakeBlockKey(node, i), Make(200)).ok());
  }
  CHECK(Cached(cache, MakeBlockKey(1, 1)) != nullptr);
  CHECK(Cached(cache, MakeBlockKey(2, 0)) != nullptr);
  CHECK(Cached(cache, MakeBlockKey(3, 0)) == nullptr);  // served, not kept
  CacheStats s = cache.Snapshot();
  CHECK(s.bytes == 800);
  CHECK(s.declined == 2);
  // Full: a block that does not fit is refused rather than evicting what the
  // owner counts, and the owner is told it does not hold the file.
  owner.keep.insert(4);
  REQUIRE(cache.GetOrLoad(MakeBlockKey(4, 0), Make(300)).ok());
  CHECK(Cached(cache, MakeBlockKey(4, 0)) == nullptr);
  CHECK(cache.Snapshot().rejected == 1);
  CHECK(cache.Snapshot().evictions == 0);
  CHECK(owner.dropped == std::vector<uint32_t>{4});
  // A file part held when a later block does not fit: all of it goes.
  REQUIRE(cache.GetOrLoad(MakeBlockKey(2, 2), Make(300)).ok());
  CHECK(Cached(cache, MakeBlockKey(2, 0)) == nullptr);
  CHECK(Cached(cache, MakeBlockKey(2, 1)) == nullptr);
  CHECK(owner.dropped == std::vector<uint32_t>{4, 2});
  CHECK(cache.Snapshot().bytes == 400);
  owner.keep.erase(2);
  // The owner names a file to drop: all its blocks go, then the new one fits.
  owner.drop = {1};
  REQUIRE(cache.GetOrLoad(MakeBlockKey(4, 1), Make(700)).ok());
  CHECK(Cached(cache, MakeBlockKey(1, 0)) == nullptr);
  CHECK(Cached(cache, MakeBlockKey(1, 1)) == nullptr);
  CHECK(Cached(cache, MakeBlockKey(4, 1)) != nullptr);
  CHECK(cache.Snapshot().bytes == 700);
  CHECK(cache.Snapshot().peak_bytes == 800);
}

TEST_CASE("EraseFileIf erases only when the decision, taken under the lock, says so", "[cache]") {
  RamCache cache(1000, std::make_unique<LruPolicy>());
  REQUIRE(cache.GetOrLoad(MakeBlockKey(3, 0), Make(10)).ok());
  int asked = 0;
  cache.EraseFileIf(3, [&] {
    ++asked;
    return false;
  });
  CHECK(Cached(cache, MakeBlockKey(3, 0)) != nullptr);
  cache.EraseFileIf(3, [&] {
    ++asked;
    return true;
  });
  CHECK(Cached(cache, MakeBlockKey(3, 0)) == nullptr);
  CHECK(asked == 2);
}

TEST_CASE("EraseFile drops every cached block of a file, whatever their indices", "[cache]") {
  RamCache cache(100000, std::make_unique<LruPolicy>());
  for (uint32_t i : {0u, 3u, 70u}) REQUIRE(cache.GetOrLoad(MakeBlockKey(5, i), Make(10)).ok());
  REQUIRE(cache.GetOrLoad(MakeBlockKey(6, 0), Make(10)).ok());
  cache.EraseFile(5);
  CHECK(cache.Snapshot().bytes == 10);
  CHECK(Cached(cache, MakeBlockKey(6, 0)) != nullptr);
  cache.EraseFile(5);  // nothing left: a no-op
  cache.EraseFile(77);
  CHECK(cache.Snapshot().entries == 1);
}

TEST_CASE("Clear tells the owner of every file it held", "[cache]") {
  RamCache cache(1000, std::make_unique<LruPolicy>());
  FakeOwner owner;
  owner.keep = {1, 2};
  cache.SetOwner(&owner);
  for (uint32_t node : {1u, 2u}) REQUIRE(cache.GetOrLoad(MakeBlockKey(node, 0), Make(10)).ok());
  cache.Clear();
  std::sort(owner.dropped.begin(), owner.dropped.end());
  CHECK(owner.dropped == std::vector<uint32_t>{1, 2});
  CHECK(cache.Snapshot().bytes == 0);
  cache.SetOwner(nullptr);
  CHECK_FALSE(cache.Snapshot().owned);
}
}  // namespace
}  // namespace clairfs::fs
