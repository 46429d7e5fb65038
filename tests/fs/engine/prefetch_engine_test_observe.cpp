// The prefetch engine without FUSE (prefetch_engine_fixture.hpp): how it
// sees the job - listings, opens through the open watcher or after the fact,
// reads that wait, reported sampler settings.
#include <fcntl.h>

#include <catch2/catch.hpp>

#include "tests/fs/engine/prefetch_engine_fixture.hpp"

namespace clairfs::fs {
namespace {

using testing::Fixture;
using testing::JobConfig;
using testing::TreeSpec;
namespace ft = format::testing;
namespace pf = clairfs::prefetch;

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
  // hold only the one READ that reaches the Vfs. The file was pushed, so it
  // was in the page cache alone: that READ (the kernel dropped the pages)
  // loads it from the packs again, and the RAM cache keeps it.
  REQUIRE(s.fetched >= 40);
  REQUIRE(s.held_files == 40);
  CHECK(f.stats.reads_from_ram.load() + f.stats.reads_from_pack.load() == 0);
  REQUIRE(f.vfs->Read(uint64_t{*n} + 1, 0, 4096).ok());
  CHECK(f.stats.reads.load() == 1);
  CHECK(f.stats.reads_from_pack.load() == 1);
  CHECK(f.engine->Snapshot().reloaded == 1);
  CHECK(f.engine->Snapshot().held_files == 39);
  REQUIRE(f.vfs->Read(uint64_t{*n} + 1, 0, 4096).ok());
  CHECK(f.stats.reads_from_ram.load() == 1);
}

TEST_CASE("reads that wait for their bytes count as stalls, in the latest open's epoch",
          "[prefetch_engine]") {
  Fixture f(1 << 20);  // not started: nothing is fetched, every open stalls
  auto first = f.job.order->Paths(0, 0);
  REQUIRE(first.ok());
  const uint64_t ino = uint64_t{*f.manifest->Resolve("train/" + first->front())} + 1;
  REQUIRE(f.vfs->Open(ino, O_RDONLY).ok());
  const pf::PlannerStats opened = f.engine->Snapshot().planner;
  CHECK(opened.stalled_opens == 1);
  CHECK(opened.read_stalls == 0);
  // The first READ loads the file from the packs: the job waits for it.
  REQUIRE(f.vfs->Read(ino, 0, 1 << 20).ok());
  const pf::PlannerStats read = f.engine->Snapshot().planner;
  CHECK(read.read_stalls == 1);
  CHECK(read.read_stall_ns > 0);
  CHECK(read.stall_ns == opened.stall_ns + read.read_stall_ns);
  REQUIRE(read.per_epoch.size() == 1);
  CHECK(read.per_epoch[0].epoch == 0);
  CHECK(read.per_epoch[0].stall_ns == read.stall_ns);
  // Kept after the demand read: the next READ is answered at once.
  REQUIRE(f.vfs->Read(ino, 0, 1 << 20).ok());
  CHECK(f.engine->Snapshot().planner.read_stalls == 1);
  // A file outside the dataset is not the prefetcher's to count.
  const uint64_t other = uint64_t{*f.manifest->Resolve("other.txt")} + 1;
  REQUIRE(f.vfs->Read(other, 0, 4096).ok());
  CHECK(f.engine->Snapshot().planner.read_stalls == 1);
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
