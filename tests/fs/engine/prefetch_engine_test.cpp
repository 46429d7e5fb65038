// The prefetch engine without FUSE (prefetch_engine_fixture.hpp): fetching,
// the cache's budget and its owner, pushes, demand reads and deviations.
#include <catch2/catch.hpp>

#include "tests/fs/engine/prefetch_engine_fixture.hpp"

namespace clairfs::fs {
namespace {

using testing::Fixture;
using testing::JobConfig;
namespace ft = format::testing;
namespace pf = clairfs::prefetch;

TEST_CASE("the job maps dataset indices to manifest nodes under the root", "[prefetch_engine]") {
  Fixture f(1 << 20);
  REQUIRE(f.job.order->dataset().size() == 40);
  REQUIRE(f.job.config.local_ranks == std::vector<uint64_t>{0, 1});
  for (uint64_t i = 0; i < 40; ++i) {
    const pf::FileId n = f.job.input.file_of_index[i];
    REQUIRE(n != pf::kNoFile);
    CHECK(f.manifest->Path(n) == "train/" + f.job.order->dataset().paths[i]);
  }
  auto other = f.manifest->Resolve("other.txt");
  REQUIRE(other.ok());
  CHECK(f.job.in_dataset[*other] == 0);
  Config bad = JobConfig(0);
  bad.prefetch_root = "nope";
  auto j = BuildPrefetchJob(bad, *f.manifest, 0, 1);
  REQUIRE_FALSE(j.ok());
  CHECK(j.status().message().find("prefetch_root") != std::string::npos);
  CHECK(f.job.config.budget_bytes == (uint64_t{1} << 20));
}

TEST_CASE("with room for everything every predicted open is ready and pushed",
          "[prefetch_engine]") {
  Fixture f(1 << 20);
  f.engine->Start();
  f.WaitFetched(40);
  f.OpenEpoch(0);
  f.OpenEpoch(1);
  const PrefetchStats s = f.engine->Snapshot();
  CHECK(s.planner.opens == 80);
  CHECK(s.planner.ready_opens == 80);
  CHECK(s.ready_in_page_cache == 80);
  CHECK(s.pushes >= 40);
  // Pushed bytes are the file's bytes.
  auto n = f.manifest->Resolve("train/c1/i3.jpg");
  REQUIRE(n.ok());
  const auto& want = f.dataset.contents.at("train/c1/i3.jpg");
  CHECK(f.pusher.pushed.at(uint64_t{*n} + 1) == std::string(want.begin(), want.end()));
  CHECK(s.planner.deviations == 0);
  clairfs::JsonWriter w;
  w.BeginObject();
  f.engine->WriteStats(w);
  w.EndObject();
  CHECK(w.str().find("\"ready\":80,") != std::string::npos);
}

TEST_CASE("a planner replaced while running starts from an empty cache; open counts add up",
          "[prefetch_engine]") {
  Fixture f(1 << 20);
  f.engine->Start();
  f.WaitFetched(40);
  f.OpenEpoch(0);
  const PrefetchStats before = f.engine->Snapshot();
  REQUIRE(before.held_bytes > 0);
  REQUIRE(before.planner.opens == 40);
  // The same job's order, from a new planner (as the job's report would give).
  auto next = pf::Planner::Create(f.job.config, f.job.input, clairfs::SteadyClock::Instance());
  REQUIRE(next.ok());
  pf::Planner* fresh = next->get();
  f.engine->Replace(std::move(*next), "reported");
  CHECK(f.engine->planner().get() == fresh);
  // Nothing the old planner kept stays in RAM (the new one counts none of it).
  CHECK(f.engine->Snapshot().planner.resident_files <= 40);
  f.WaitFetched(before.fetched + 1);  // the new planner fetches again
  f.OpenEpoch(0);
  const PrefetchStats after = f.engine->Snapshot();
  CHECK(after.planner.opens == 80);  // 40 counted by each planner
  CHECK(after.planner.deviations == 0);
  CHECK(after.fetched > before.fetched);
  clairfs::JsonWriter w;
  w.BeginObject();
  f.engine->WriteStats(w);
  w.EndObject();
  CHECK(w.str().find("\"sampler\":\"reported\"") != std::string::npos);
  CHECK(w.str().find("\"planners_replaced\":1") != std::string::npos);
  // The cache and the page cache hold only what the new planner counts
  // (read with the fetch threads stopped, so that both are read at one moment).
  f.engine->Stop();
  const PrefetchStats still = f.engine->Snapshot();
  CHECK(f.cache->Snapshot().bytes + still.held_bytes <=
        still.planner.resident_bytes + still.planner.in_flight_bytes);
}

TEST_CASE("an inode the kernel does not know stays in RAM as the second tier",
          "[prefetch_engine]") {
  Fixture f(1 << 20);
  for (uint32_t n = 0; n < f.manifest->node_count(); ++n) f.pusher.unknown.insert(n + 1);
  f.engine->Start();
  f.WaitFetched(40);
  f.OpenEpoch(0);
  const PrefetchStats s = f.engine->Snapshot();
  CHECK(s.pushes == 0);
  CHECK(s.push_unknown_inode >= 40);
  CHECK(s.ready_in_ram == s.planner.ready_opens);
  CHECK(s.planner.ready_opens == 40);
}

TEST_CASE("a small budget is never exceeded and opens still read right bytes",
          "[prefetch_engine]") {
  const uint64_t budget = 12000;  // about 11 of the 40 files
  Fixture f(budget);
  f.engine->Start();
  f.WaitFetched(8);
  for (uint64_t e = 0; e < 2; ++e) f.OpenEpoch(e);
  f.engine->Stop();
  const PrefetchStats s = f.engine->Snapshot();
  const pf::PlannerStats& p = s.planner;
  CHECK(p.peak_used_bytes <= budget);
  // One owner: the cache and the page cache (the pushed files, held there
  // alone) hold exactly the files the planner counts.
  const CacheStats c = f.cache->Snapshot();
  clairfs::JsonWriter w;  // shown if a check fails
  w.BeginObject();
  f.engine->WriteStats(w);
  w.EndObject();
  INFO(w.str() << " cache rejected " << c.rejected << ", declined " << c.declined);
  CHECK(c.owned);
  CHECK(c.peak_bytes <= budget);
  CHECK(c.bytes + s.held_bytes == p.resident_bytes + p.in_flight_bytes);
  CHECK(c.evictions == 0);  // the cache never chose a victim itself
}

TEST_CASE("demand-read files are kept or not as the planner decides, within one budget",
          "[prefetch_engine]") {
  const uint64_t budget = 12000;  // about 11 of the 40 files
  Fixture f(budget);              // not started: every file is read on demand
  for (uint64_t e = 0; e < 2; ++e) f.OpenEpoch(e);
  const PrefetchStats s = f.engine->Snapshot();
  const pf::PlannerStats& p = s.planner;
  const CacheStats c = f.cache->Snapshot();
  CHECK(p.admissions > 0);
  CHECK(s.fetched == 0);  // kept demand reads are not fetches
  CHECK(c.declined > 0);  // some files were not worth keeping
  CHECK(c.bytes == p.resident_bytes);
  CHECK(c.peak_bytes <= budget);
  // The kept files are the ones the planner counts: each reads from RAM.
  CHECK(p.resident_files > 0);
  CHECK(c.entries == p.resident_files);
  // Dropping the cache tells the planner.
  f.cache->Clear();
  CHECK(f.engine->Snapshot().planner.resident_bytes == 0);
}

TEST_CASE("concurrent readers and fetches: the cache holds exactly what the planner counts",
          "[prefetch_engine]") {
  // Four threads open and read random files (dataset or not) while the fetch
  // threads run under a small budget: every read returns the file's bytes,
  // the cache never goes over the budget, and once all is quiet it holds
  // exactly the files the planner counts (these files are one block each).
  const uint64_t budget = 12000;
  Fixture f(budget);
  f.engine->Start();
  std::vector<std::string> paths;
  for (const auto& [path, bytes] : f.dataset.contents) paths.push_back(path);
  std::atomic<int> wrong{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 4; ++t) {
    readers.emplace_back([&, t] {
      std::mt19937 rng(static_cast<uint32_t>(t));
      for (int i = 0; i < 400; ++i) {
        const std::string& path = paths[rng() % paths.size()];
        auto n = f.manifest->Resolve(path);
        if (!n.ok() || !f.vfs->Open(InodeOfNode(*n), O_RDONLY).ok()) {
          ++wrong;
          continue;
        }
        auto data = f.vfs->Read(InodeOfNode(*n), 0, 1 << 20);
        std::string got;
        if (data.ok()) {
          for (const ReadSlice& s : data->slices) got.append(s.data, s.size);
        }
        const auto& want = f.dataset.contents.at(path);
        if (!data.ok() || got != std::string(want.begin(), want.end())) ++wrong;
      }
    });
  }
  for (auto& r : readers) r.join();
  f.engine->Stop();
  CHECK(wrong.load() == 0);
  const PrefetchStats s = f.engine->Snapshot();
  const pf::PlannerStats& p = s.planner;
  const CacheStats c = f.cache->Snapshot();
  CHECK(c.peak_bytes <= budget);
  CHECK(p.in_flight_bytes == 0);
  // The pushed files are in the page cache alone (these reads bypass it:
  // every one reaches the Vfs, and those of pushed files load them again).
  CHECK(c.bytes + s.held_bytes == p.resident_bytes);
  CHECK(c.entries + s.held_files == p.resident_files);
}

TEST_CASE("a pushed file is in RAM once: in the page cache, its blocks gone from the RAM cache",
          "[prefetch_engine]") {
  Fixture f(1 << 20);
  f.engine->Start();
  f.WaitFetched(40);
  f.engine->Stop();  // the counts below at one moment
  PrefetchStats s = f.engine->Snapshot();
  REQUIRE(s.pushes == 40);
  CHECK(s.held_files == 40);
  CHECK(s.held_bytes == s.planner.resident_bytes);
  CHECK(f.cache->Snapshot().bytes == 0);
  // The job's reads are the page cache's: every open ready, nothing reloaded.
  f.OpenEpoch(0);
  s = f.engine->Snapshot();
  CHECK(s.ready_in_page_cache == 40);
  CHECK(s.reloaded == 0);
  CHECK(f.stats.reads.load() == 0);
  // The kernel drops one file's pages: its next read loads it again, and
  // the RAM cache keeps it (the planner still counts it).
  auto n = f.manifest->Resolve("train/c2/i5.jpg");
  REQUIRE(n.ok());
  const uint64_t ino = uint64_t{*n} + 1;
  {
    std::lock_guard<std::mutex> lock(f.pusher.mu);
    f.pusher.pushed.erase(ino);
  }
  auto got = f.KernelRead(ino);
  REQUIRE(got.ok());
  const auto& want = f.dataset.contents.at("train/c2/i5.jpg");
  CHECK(*got == std::string(want.begin(), want.end()));
  s = f.engine->Snapshot();
  CHECK(s.reloaded == 1);
  CHECK(s.held_files == 39);
  CHECK(f.cache->Snapshot().bytes == want.size());
  CHECK(f.cache->Snapshot().bytes + s.held_bytes == s.planner.resident_bytes);
  // Opened again, it is pushed again, and its blocks stay: the READs of
  // that open may be under way.
  REQUIRE(f.vfs->Open(ino, O_RDONLY).ok());
  s = f.engine->Snapshot();
  CHECK(s.late_pushes == 1);
  CHECK(s.held_files == 39);
  CHECK(f.cache->Snapshot().bytes == want.size());
  // Its inode forgotten now, nothing is lost: it is still in the RAM cache.
  f.vfs->Forget(ino, 1);
  CHECK(f.engine->Snapshot().forgotten == 0);
  CHECK(f.cache->Snapshot().bytes == want.size());
}

TEST_CASE("a pushed file whose inode the kernel forgets is fetched again", "[prefetch_engine]") {
  Fixture f(1 << 20);
  f.engine->Start();
  f.WaitFetched(40);
  auto n = f.manifest->Resolve("train/c1/i7.jpg");
  REQUIRE(n.ok());
  const uint64_t ino = uint64_t{*n} + 1;
  // The kernel evicts the inode, pages and all, and says so.
  {
    std::lock_guard<std::mutex> lock(f.pusher.mu);
    f.pusher.pushed.erase(ino);
  }
  f.vfs->Forget(ino, 1);
  // A directory, a file outside the dataset, an unknown inode: nothing.
  f.vfs->Forget(1, 1);
  f.vfs->Forget(uint64_t{*f.manifest->Resolve("other.txt")} + 1, 1);
  f.vfs->Forget(1u << 30, 1);
  CHECK(f.engine->Snapshot().forgotten == 1);
  f.WaitFetched(41);
  f.engine->Stop();
  const PrefetchStats s = f.engine->Snapshot();
  CHECK(s.fetched == 41);
  CHECK(s.pushes == 41);
  CHECK(s.held_files == 40);
  CHECK(f.pusher.Cached(ino).has_value());
  // Another one forgotten, and the kernel does not know its inode when it
  // is fetched again: its blocks stay in the RAM cache, and a FORGET of it
  // now changes nothing.
  auto m = f.manifest->Resolve("train/c0/i0.jpg");
  REQUIRE(m.ok());
  f.pusher.unknown.insert(uint64_t{*m} + 1);
  f.vfs->Forget(uint64_t{*m} + 1, 1);
  CHECK(f.engine->Snapshot().forgotten == 2);
  f.engine->Start();
  f.WaitFetched(42);
  f.engine->Stop();
  const PrefetchStats t = f.engine->Snapshot();
  CHECK(t.push_unknown_inode == 1);
  CHECK(t.held_files == 39);
  CHECK(f.cache->Snapshot().bytes == f.dataset.contents.at("train/c0/i0.jpg").size());
  f.vfs->Forget(uint64_t{*m} + 1, 1);
  CHECK(f.engine->Snapshot().forgotten == 2);
}

TEST_CASE("opens outside the prediction are deviations and still served", "[prefetch_engine]") {
  Fixture f(1 << 20);
  f.engine->Start();
  for (int c = 3; c >= 0; --c) {
    for (int i = 9; i >= 0; --i) {
      const std::string path = "train/c" + std::to_string(c) + "/i" + std::to_string(i) + ".jpg";
      auto n = f.manifest->Resolve(path);
      REQUIRE(n.ok());
      REQUIRE(f.vfs->Open(uint64_t{*n} + 1, O_RDONLY).ok());
      auto data = f.vfs->Read(uint64_t{*n} + 1, 0, 1 << 20);
      REQUIRE(data.ok());
      CHECK(data->total == f.dataset.contents.at(path).size());
    }
  }
  CHECK(f.engine->Snapshot().planner.deviations > 0);
  // Files outside the root are not the planner's business.
  auto other = f.manifest->Resolve("other.txt");
  REQUIRE(other.ok());
  const uint64_t before = f.engine->Snapshot().planner.opens;
  REQUIRE(f.vfs->Open(uint64_t{*other} + 1, O_RDONLY).ok());
  CHECK(f.engine->Snapshot().planner.opens == before);
}

}  // namespace
}  // namespace clairfs::fs
