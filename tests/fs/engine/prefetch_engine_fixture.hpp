// The prefetch engine's test fixture: an in-memory packed ImageFolder tree
// (4 classes of 10 files under train/, and other.txt), a torch-distributed
// job over it, a fake page-cache pusher, real fetch threads, and a Vfs whose
// opens reach the engine.
#pragma once

#include <fcntl.h>
#include <stdlib.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <thread>

#include "fs/cache/cache_policy.hpp"
#include "fs/clairfsd/prefetch_setup.hpp"
#include "fs/clairfsd/report_setup.hpp"
#include "fs/engine/open_watcher.hpp"
#include "fs/engine/prefetch_engine.hpp"
#include "fs/store/memory_pack_store.hpp"
#include "fs/vfs/vfs.hpp"
#include "tests/support/format_fixture.hpp"
#include "tests/support/memory_dataset.hpp"

namespace clairfs::fs::testing {

namespace ft = format::testing;
namespace pf = clairfs::prefetch;

// Records pushes, as the kernel's page cache would hold them; inodes in
// `unknown` answer NotFound like an unlooked-up inode.
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
  // The file's bytes if the page cache holds them.
  std::optional<std::string> Cached(uint64_t ino) {
    std::lock_guard<std::mutex> lock(mu);
    auto it = pushed.find(ino);
    if (it == pushed.end()) return std::nullopt;
    return it->second;
  }
  std::mutex mu;
  std::set<uint64_t> unknown;
  std::map<uint64_t, std::string> pushed;
};

inline ft::DatasetSpec TreeSpec() {
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

inline Config JobConfig(uint64_t budget) {
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
        auto got = KernelRead(uint64_t{*n} + 1);
        REQUIRE(got.ok());
        const auto& want = dataset.contents.at("train/" + (*paths)[i]);
        REQUIRE(*got == std::string(want.begin(), want.end()));
      }
    }
  }

  // A whole file as the kernel reads it: from its page cache if the file was
  // pushed there, else by a READ of the Vfs.
  Result<std::string> KernelRead(uint64_t ino) {
    if (auto cached = pusher.Cached(ino)) return *cached;
    auto data = vfs->Read(ino, 0, 1 << 20);
    if (!data.ok()) return data.status();
    std::string got;
    for (const ReadSlice& s : data->slices) got.append(s.data, s.size);
    return got;
  }

  std::unique_ptr<RamCache> cache;
  Stats stats;
  Config config;
  PrefetchJob job;
  FakePusher pusher;
  std::unique_ptr<PrefetchEngine> engine;
  std::unique_ptr<Vfs> vfs;
};

}  // namespace clairfs::fs::testing
