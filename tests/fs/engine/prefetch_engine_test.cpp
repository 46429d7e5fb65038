// The prefetch engine without FUSE: an in-memory packed ImageFolder tree, a
// fake page-cache pusher, real fetch threads, opens through Vfs::Open.
#include "fs/engine/prefetch_engine.hpp"

#include <fcntl.h>
#include <stdlib.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "fs/cache/cache_policy.hpp"
#include "fs/clairfsd/prefetch_setup.hpp"
#include "fs/clairfsd/report_setup.hpp"
#include "fs/engine/open_watcher.hpp"
#include "fs/store/memory_pack_store.hpp"
#include "fs/vfs/vfs.hpp"
#include "tests/support/format_fixture.hpp"
#include "tests/support/memory_dataset.hpp"

namespace clairfs::fs {
namespace {

namespace ft = format::testing;
namespace pf = clairfs::prefetch;

// Records pushes; inodes in `unknown` answer NotFound like an unlooked-up inode.
class FakePusher final : public PageCachePusher {
 public:
  Status Push(uint64_t ino, uint64_t offset, const ReadData& data) override {
    std::lock_guard<std::mutex> lock(mu);
    if (unknown.count(ino)) return Status::NotFound("inode " + std::to_string(ino));
    std::string bytes;
    for (const ReadSlice& s : data.slices) bytes.append(s.data, s.size);
    pushed[ino] = bytes;
    return Status::Ok();
  }
  std::mutex mu;
  std::set<uint64_t> unknown;
  std::map<uint64_t, std::string> pushed;
};

ft::DatasetSpec TreeSpec() {
  ft::DatasetSpec spec;
  spec.partition_count = 2;
  for (int c = 0; c < 4; ++c) {
    for (int i = 0; i < 10; ++i) {
      const uint32_t seed = static_cast<uint32_t>(c * 100 + i);
      spec.files.push_back({"train/c" + std::to_string(c) + "/i" + std::to_string(i) + ".jpg",
                            ft::RandomBytes(1000 + 10 * i, seed), seed % 2});
    }
  }
  spec.files.push_back({"other.txt", ft::TextBytes(100, 7), 0});
  return spec;
}

Config JobConfig(uint64_t budget) {
  Config c;
  c.prefetch_sampler = "torch-distributed";
  c.prefetch_root = "train";
  c.prefetch_settings = {{"seed", "5"}};
  c.prefetch_epochs = 2;
  c.prefetch_world_size = 2;
  c.prefetch_batch_size = 2;
  c.prefetch_workers = 1;
  c.ram_cache = budget;
  return c;
}

struct Fixture : MemoryDataset {
  explicit Fixture(uint64_t budget) : MemoryDataset(TreeSpec()) {
    config = JobConfig(budget);
    cache = std::make_unique<RamCache>(config.ram_cache, std::make_unique<LruPolicy>());
    auto j = BuildPrefetchJob(config, *manifest, 0, 1);
    REQUIRE(j.ok());
    job = std::move(*j);
    auto planner = pf::Planner::Create(job.config, job.input, clairfs::SteadyClock::Instance());
    REQUIRE(planner.ok());
    PrefetchEngineOptions eo;
    eo.open_wait = std::chrono::milliseconds(500);
    eo.clock = &clock;
    engine = std::make_unique<PrefetchEngine>(std::move(*planner), job.in_dataset, manifest,
                                              source.get(), cache.get(), &stats, &pusher, eo);
    VfsOptions o;
    o.decline_open = false;  // every open reaches the engine
    o.open_observer = engine.get();
    vfs = std::make_unique<Vfs>(manifest, source.get(), cache.get(), &stats, o);
  }
  ~Fixture() { engine->Stop(); }

  clairfs::FakeClock clock;  // the engine's; the planner's is the steady clock

  // Waits until the planner has fetched at least `n` files (or 5 s passed).
  void WaitFetched(uint64_t n) {
    for (int i = 0; i < 500 && engine->Snapshot().fetched < n; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  // Opens the files ranks 0 and 1 read in `epoch`, interleaved, through the Vfs.
  void OpenEpoch(uint64_t epoch) {
    auto r0 = job.order->Paths(0, epoch);
    auto r1 = job.order->Paths(1, epoch);
    REQUIRE(r0.ok());
    REQUIRE(r1.ok());
    for (size_t i = 0; i < r0->size(); ++i) {
      for (const auto* paths : {&*r0, &*r1}) {
        if (i >= paths->size()) continue;
        auto n = manifest->Resolve("train/" + (*paths)[i]);
        REQUIRE(n.ok());
        REQUIRE(vfs->Open(uint64_t{*n} + 1, O_RDONLY).ok());
        auto data = vfs->Read(uint64_t{*n} + 1, 0, 1 << 20);
        REQUIRE(data.ok());
        std::string got;
        for (const ReadSlice& s : data->slices) got.append(s.data, s.size);
        const auto& want = dataset.contents.at("train/" + (*paths)[i]);
        REQUIRE(got == std::string(want.begin(), want.end()));
      }
    }
  }

  std::unique_ptr<RamCache> cache;
  Stats stats;
  Config config;
  PrefetchJob job;
  FakePusher pusher;
  std::unique_ptr<PrefetchEngine> engine;
  std::unique_ptr<Vfs> vfs;
};

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
  REQUIRE(f.cache->Snapshot().bytes > 0);
  const PrefetchStats before = f.engine->Snapshot();
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
  // The cache holds only what the new planner counts (read with the fetch
  // threads stopped, so that both are read at one moment).
  f.engine->Stop();
  const PrefetchStats still = f.engine->Snapshot();
  CHECK(f.cache->Snapshot().bytes <= still.planner.resident_bytes + still.planner.in_flight_bytes);
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
  const pf::PlannerStats p = f.engine->Snapshot().planner;
  CHECK(p.peak_used_bytes <= budget);
  // One owner: the cache holds exactly the files the planner counts.
  const CacheStats c = f.cache->Snapshot();
  clairfs::JsonWriter w;  // shown if a check fails
  w.BeginObject();
  f.engine->WriteStats(w);
  w.EndObject();
  INFO(w.str() << " cache rejected " << c.rejected << ", declined " << c.declined);
  CHECK(c.owned);
  CHECK(c.peak_bytes <= budget);
  CHECK(c.bytes == p.resident_bytes + p.in_flight_bytes);
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
  const pf::PlannerStats p = f.engine->Snapshot().planner;
  const CacheStats c = f.cache->Snapshot();
  CHECK(c.peak_bytes <= budget);
  CHECK(p.in_flight_bytes == 0);
  CHECK(c.bytes == p.resident_bytes);
  CHECK(c.entries == p.resident_files);
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

TEST_CASE("pushes refused before a listing are retried once the kernel has the inodes",
          "[prefetch_engine]") {
  Fixture f(1 << 20);
  for (uint32_t n = 0; n < f.manifest->node_count(); ++n) f.pusher.unknown.insert(n + 1);
  f.engine->Start();
  f.WaitFetched(40);
  REQUIRE(f.engine->Snapshot().pushes == 0);
  // The kernel learns the inodes of train/c2 from a READDIRPLUS reply.
  auto dir = f.manifest->Resolve("train/c2");
  REQUIRE(dir.ok());
  {
    std::lock_guard<std::mutex> lock(f.pusher.mu);
    f.pusher.unknown.clear();
  }
  REQUIRE(f.vfs
              ->ReadDir(uint64_t{*dir} + 1, 0,
                        [](std::string_view, const Attr&, uint64_t) { return true; })
              .ok());
  // Not before the kernel has had the time to make the inodes from the reply.
  // The fetch threads look every 20 ms at most (idle_poll): give them a few
  // looks; only the engine's clock moving lets them push.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  CHECK(f.engine->Snapshot().listed_pushes == 0);
  f.clock.Advance(std::chrono::milliseconds(5));
  for (int i = 0; i < 200 && f.engine->Snapshot().listed_pushes < 10; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(f.engine->Snapshot().listed_pushes == 10);  // exactly the ten files of train/c2
  std::lock_guard<std::mutex> lock(f.pusher.mu);
  for (int i = 0; i < 10; ++i) {
    const std::string path = "train/c2/i" + std::to_string(i) + ".jpg";
    auto n = f.manifest->Resolve(path);
    REQUIRE(n.ok());
    const auto& want = f.dataset.contents.at(path);
    REQUIRE(f.pusher.pushed.count(uint64_t{*n} + 1) == 1);
    CHECK(f.pusher.pushed.at(uint64_t{*n} + 1) == std::string(want.begin(), want.end()));
  }
  CHECK(f.pusher.pushed.size() == 10);
}

TEST_CASE("the open watcher reports opens of dataset files in order, by any process",
          "[prefetch_engine]") {
  Fixture f(1 << 20);
  char tmpl[] = "/tmp/clairfs-watch.XXXXXX";
  REQUIRE(::mkdtemp(tmpl) != nullptr);
  const std::filesystem::path root(tmpl);
  for (const auto& [path, bytes] : f.dataset.contents) {
    std::filesystem::create_directories((root / path).parent_path());
    std::ofstream(root / path, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()),
               static_cast<std::streamsize>(bytes.size()));
  }
  std::mutex mu;
  std::vector<uint32_t> seen;
  auto w = OpenWatcher::Start(root.string(), f.manifest, f.job.in_dataset, [&](uint32_t node) {
    std::lock_guard<std::mutex> lock(mu);
    seen.push_back(node);
  });
  REQUIRE(w.ok());
  CHECK((*w)->watches() == 4);  // train/c0..c3; other.txt is not in the dataset
  std::vector<uint32_t> want;
  for (const char* path : {"train/c3/i1.jpg", "other.txt", "train/c0/i9.jpg", "train/c3/i1.jpg"}) {
    std::ifstream in(root / path, std::ios::binary);
    REQUIRE(in.good());
    if (std::string(path) != "other.txt") want.push_back(*f.manifest->Resolve(path));
  }
  // Another process's open counts as well.
  REQUIRE(std::system(("cat " + (root / "train/c2/i5.jpg").string() + " >/dev/null").c_str()) == 0);
  want.push_back(*f.manifest->Resolve("train/c2/i5.jpg"));
  for (int i = 0; i < 200 && (*w)->events() < want.size(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  (*w)->Stop();
  {
    std::lock_guard<std::mutex> lock(mu);
    CHECK(seen == want);
  }
  CHECK((*w)->overflows() == 0);
  // A directory that is not there is named in the error.
  std::filesystem::remove_all(root / "train/c1");
  auto bad = OpenWatcher::Start(root.string(), f.manifest, f.job.in_dataset, [](uint32_t) {});
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("train/c1") != std::string::npos);
  std::filesystem::remove_all(root);
}

TEST_CASE("opens reported after the fact count like answered ones", "[prefetch_engine]") {
  Fixture f(1 << 20);
  f.engine->Start();
  f.WaitFetched(40);
  auto r0 = f.job.order->Paths(0, 0);
  REQUIRE(r0.ok());
  for (const auto& p : *r0) f.engine->OnOpenEvent(*f.manifest->Resolve("train/" + p));
  const PrefetchStats s = f.engine->Snapshot();
  CHECK(s.planner.opens == r0->size());
  CHECK(s.planner.ready_opens == r0->size());
  CHECK(s.planner.deviations == 0);
  // The Vfs declines opens from now on, and counts the READs that reach it.
  auto n = f.manifest->Resolve("train/" + r0->front());
  auto before = f.vfs->Open(uint64_t{*n} + 1, O_RDONLY);
  REQUIRE(before.ok());
  CHECK_FALSE(before->decline);
  f.vfs->DeclineOpens();
  auto after = f.vfs->Open(uint64_t{*n} + 1, O_RDONLY);
  REQUIRE(after.ok());
  CHECK(after->decline);
  // The fetches loaded 40 files, none of them a READ: the READ counters
  // hold only the one READ that reaches the Vfs, answered from RAM.
  REQUIRE(s.fetched >= 40);
  CHECK(f.stats.reads_from_ram.load() + f.stats.reads_from_pack.load() == 0);
  REQUIRE(f.vfs->Read(uint64_t{*n} + 1, 0, 4096).ok());
  CHECK(f.stats.reads.load() == 1);
  CHECK(f.stats.reads_from_ram.load() == 1);
  CHECK(f.stats.reads_from_pack.load() == 0);
}

TEST_CASE("reported sampler settings give the order the same settings configured give",
          "[prefetch_engine]") {
  MemoryDataset d(TreeSpec());
  // torch-distributed, rank 1 of 2; keras (image_dataset_from_directory) sharded 2 ways.
  Config torch = JobConfig(1 << 20);
  Config keras = JobConfig(1 << 20);
  keras.prefetch_sampler = "keras";
  keras.prefetch_settings = {{"seed", "3"}, {"batch_size", "1"}, {"keras_version", "2.15"}};
  std::vector<std::pair<Config, std::map<std::string, std::string>>> cases = {
      {torch,
       {{"sampler", "torch-distributed"},
        {"root", "train"},
        {"seed", "5"},
        {"rank", "1"},
        {"world_size", "2"}}},
      {keras,
       {{"sampler", "keras"},
        {"root", "train"},
        {"seed", "3"},
        {"batch-size", "1"},
        {"keras-version", "2.15"},
        {"rank", "1"},
        {"world_size", "2"}}},
  };
  // Keras 3.15: the reported epoch k is the dataset's k-th iteration (the loop driver).
  Config keras3 = keras;
  keras3.prefetch_settings = {
      {"seed", "3"}, {"batch_size", "1"}, {"keras_version", "3.15"}, {"driver", "loop"}};
  cases.push_back({keras3,
                   {{"sampler", "keras"},
                    {"root", "train"},
                    {"seed", "3"},
                    {"batch-size", "1"},
                    {"keras-version", "3.15"}}});
  for (const auto& [config, settings] : cases) {
    INFO(config.prefetch_sampler);
    auto job = BuildPrefetchJob(config, *d.manifest, 0, 1);
    REQUIRE(job.ok());
    auto model = ModelOfSettings(*d.manifest, settings);
    INFO(model.status().ToString());
    REQUIRE(model.ok());
    CHECK(model->memory_bytes > 40 * 40);
    for (uint64_t epoch : {0, 1, 7}) {
      auto want = PredictedFiles(*job)(1, epoch);
      auto got = model->files(epoch);
      REQUIRE((want.ok() && got.ok()));
      // A DistributedSampler rank reads its half; every rank of pattern B
      // reads every file (the shard comes after the reads).
      CHECK(got->size() == (config.prefetch_sampler == "keras" ? 40 : 20));
      CHECK(*got == *want);
    }
  }
  // What cannot be modelled is named.
  const std::vector<std::pair<std::map<std::string, std::string>, std::string>> bad = {
      {{{"root", "train"}}, "sampler: missing"},
      {{{"sampler", "keras"}, {"rank", "2"}, {"world_size", "2"}}, "rank 2 of world_size 2"},
      {{{"sampler", "keras"}, {"world_size", "two"}}, "world_size: 'two' is not a number"},
      {{{"sampler", "keras"}, {"bogus", "1"}}, "bogus: not a sampler setting"},
      {{{"sampler", "order-file"}, {"order-file", "/etc/passwd"}}, "order-file: not a sampler"},
      {{{"sampler", "keras"}, {"root", "nope"}, {"seed", "1"}}, "prefetch_root: 'nope' is not a"},
      {{{"sampler", "keras"}, {"root", "train"}, {"seed", "x"}}, "prefetch_seed"},
  };
  for (const auto& [settings, message] : bad) {
    auto model = ModelOfSettings(*d.manifest, settings);
    INFO(message << " | " << model.status().ToString());
    REQUIRE_FALSE(model.ok());
    CHECK(model.status().message().find(message) != std::string::npos);
  }
}

}  // namespace
}  // namespace clairfs::fs
