// The simulator's policies, against cases worked out by hand.
#include <catch2/catch.hpp>
#include <tuple>
#include <vector>

#include "tools/sim/fanstore_source.hpp"
#include "tools/sim/job.hpp"
#include "tools/sim/nopfs_source.hpp"

using namespace clairfs;
using namespace clairfs::sim;

namespace {

// Each rank's order, the same every epoch.
class FixedOrder final : public prefetch::Sampler {
 public:
  FixedOrder(uint64_t files, std::vector<std::vector<prefetch::Index>> orders)
      : files_(files), orders_(std::move(orders)) {}
  uint64_t world_size() const override { return orders_.size(); }
  uint64_t dataset_size() const override { return files_; }
  Result<std::vector<prefetch::Index>> Order(uint64_t rank, uint64_t) const override {
    return orders_[rank];
  }

 private:
  uint64_t files_;
  std::vector<std::vector<prefetch::Index>> orders_;
};

}  // namespace

TEST_CASE("FanStore: partitions staged before training, local reads from the SSD", "[sim]") {
  // 4 files of 100 B in 2 partitions (files 0-1 on node 0, 2-3 on node 1).
  // Staging: 2 x 200 B through the shared file system at 100 B/s together
  // (4 s), then 0.2 s into each SSD (1000 B/s): training starts at 4.2.
  // Each local read takes 0.1 s: batches ready at 4.3 and 4.4; steps of 0.5 s
  // at 4.3-4.8 and 4.8-5.3. The second epoch: reads 5.3-5.4, 5.4-5.5, steps
  // 5.4-5.9, 5.9-6.4.
  EventLoop loop;
  const std::vector<uint64_t> bytes(4, 100);
  SharedDevice fs(&loop, DeviceSpec{.bandwidth = 100});
  FanStoreSource fan(&loop, &fs, &bytes, 2, 2,
                     NodeSpec{.ssd = {.bandwidth = 1000}, .link = {.bandwidth = 100}});
  FixedOrder order(4, {{0, 1}, {2, 3}});
  JobSpec job{.nodes = 2,
              .batch_size = 1,
              .compute_seconds = 0.5,
              .epochs = 2,
              .workers = 1,
              .prefetch_factor = 2};
  auto r = RunJob(&loop, job, order, &fan);
  REQUIRE(r.ok());
  CHECK(fan.staging_seconds() == Approx(4.2));
  CHECK((*r)[0].seconds == Approx(5.3));
  CHECK((*r)[1].seconds == Approx(1.1));
  CHECK((*r)[0].sources.local_bytes == 400);
  CHECK((*r)[0].sources.peer_bytes == 0);
  CHECK(fs.counters().bytes == 400);  // staging only: nothing read from there again
}

TEST_CASE("FanStore: another node's file is its SSD, then its link", "[sim]") {
  // Each rank reads the other node's file: 0.1 s on the home's SSD, 1 s on
  // its link (100 B/s), after staging (4.2 s as above): ready at 5.3.
  EventLoop loop;
  const std::vector<uint64_t> bytes(4, 100);
  SharedDevice fs(&loop, DeviceSpec{.bandwidth = 100});
  FanStoreSource fan(&loop, &fs, &bytes, 2, 2,
                     NodeSpec{.ssd = {.bandwidth = 1000}, .link = {.bandwidth = 100}});
  CHECK(fan.HomeOf(1) == 0);
  CHECK(fan.HomeOf(2) == 1);
  FixedOrder order(4, {{2}, {0}});
  JobSpec job{.nodes = 2, .batch_size = 1, .compute_seconds = 0.5, .workers = 1};
  auto r = RunJob(&loop, job, order, &fan);
  REQUIRE(r.ok());
  CHECK((*r)[0].seconds == Approx(5.8));
  CHECK((*r)[0].sources.peer_bytes == 200);
  CHECK((*r)[0].sources.local_bytes == 0);
}

TEST_CASE("NoPFS: the most-read files to RAM, the next to the SSD, filled at first read", "[sim]") {
  // 3 files of 100 B read in order every epoch: equally often, so the first
  // read goes to RAM (100 B), the second to the SSD (100 B), the third
  // nowhere. Epoch 0 reads all from the shared file system (1 s each, one
  // worker, one batch ahead, no compute); epoch 1 takes file 0 from RAM, file
  // 1 from the SSD (0.1 s) and file 2 from the shared file system (1 s).
  EventLoop loop;
  const std::vector<uint64_t> bytes(3, 100);
  SharedDevice fs(&loop, DeviceSpec{.bandwidth = 100});
  FixedOrder order(3, {{0, 1, 2}});
  JobSpec job{
      .batch_size = 1, .compute_seconds = 0, .epochs = 2, .workers = 1, .prefetch_factor = 1};
  auto nopfs = NopfsSource::Create(&loop, &fs, &bytes, order, job,
                                   NopfsSpec{.ram_bytes = 100,
                                             .ssd_bytes = 150,
                                             .node = {.ssd = {.bandwidth = 1000}, .link = {}},
                                             .prefetcher = false});
  REQUIRE(nopfs.ok());
  CHECK((*nopfs)->TierOf(0, 0) == NopfsSource::Tier::kRam);
  CHECK((*nopfs)->TierOf(0, 1) == NopfsSource::Tier::kSsd);
  CHECK((*nopfs)->TierOf(0, 2) == NopfsSource::Tier::kNone);
  auto r = RunJob(&loop, job, order, nopfs->get());
  REQUIRE(r.ok());
  CHECK((*r)[0].seconds == Approx(3.0));
  CHECK((*r)[0].sources.shared_fs_bytes == 300);
  CHECK((*r)[1].seconds == Approx(1.1));
  CHECK((*r)[1].sources.ram_bytes == 100);
  CHECK((*r)[1].sources.local_bytes == 100);
  CHECK((*r)[1].sources.shared_fs_bytes == 100);
}

TEST_CASE("NoPFS: a file another node holds comes from there, not the shared file system",
          "[sim]") {
  // Node 0 reads file 0 (50 B) while node 1 reads file 1 (100 B), sharing
  // the shared file system (100 B/s): file 0 is in node 0's RAM at 1.0; node
  // 0 then reads file 2 (100 B) beside the rest of file 1: file 1 done at 2.0,
  // file 2 at 2.5. Node 1 reads file 0 at 2.0 from node 0's RAM over its link
  // (50 B at 200 B/s: 2.25), not from the shared file system.
  EventLoop loop;
  const std::vector<uint64_t> bytes{50, 100, 100};
  SharedDevice fs(&loop, DeviceSpec{.bandwidth = 100});
  FixedOrder order(3, {{0, 2}, {1, 0}});
  JobSpec job{
      .nodes = 2, .batch_size = 1, .compute_seconds = 0, .workers = 1, .prefetch_factor = 1};
  auto nopfs = NopfsSource::Create(&loop, &fs, &bytes, order, job,
                                   NopfsSpec{.ram_bytes = 1000,
                                             .ssd_bytes = 0,
                                             .node = {.ssd = {}, .link = {.bandwidth = 200}},
                                             .prefetcher = false});
  REQUIRE(nopfs.ok());
  auto r = RunJob(&loop, job, order, nopfs->get());
  REQUIRE(r.ok());
  CHECK((*r)[0].seconds == Approx(2.5));
  CHECK((*r)[0].sources.shared_fs_bytes == 250);
  CHECK((*r)[0].sources.peer_bytes == 50);
}

TEST_CASE("NoPFS: a first read comes from the lowest numbered other node that holds the file",
          "[sim]") {
  // One rank per node, one file a step. File 0 is read by every node (node
  // 0 first); file 1 by node 3 at step 0, then by node 1 at step 3; file 2
  // by node 0 alone; file 12 by nobody.
  EventLoop loop;
  const std::vector<uint64_t> bytes(13, 100);
  SharedDevice fs(&loop, DeviceSpec{.bandwidth = 1e6});
  FixedOrder order(13, {{0, 2, 3, 4}, {5, 0, 6, 1}, {7, 8, 9, 0}, {1, 0, 10, 11}});
  JobSpec job{
      .nodes = 4, .batch_size = 1, .compute_seconds = 0.1, .workers = 1, .prefetch_factor = 1};
  auto nopfs =
      NopfsSource::Create(&loop, &fs, &bytes, order, job,
                          NopfsSpec{.ram_bytes = 1000,
                                    .ssd_bytes = 0,
                                    .node = {.ssd = {.bandwidth = 1e6}, .link = {.bandwidth = 1e6}},
                                    .prefetcher = false});
  REQUIRE(nopfs.ok());
  const NopfsSource& s = **nopfs;
  CHECK(s.Holder(0, 1) == -1);
  REQUIRE(RunJob(&loop, job, order, nopfs->get()).ok());
  CHECK(s.Holder(0, 0) == 1);
  CHECK(s.Holder(1, 0) == 0);
  CHECK(s.Holder(2, 0) == 0);
  CHECK(s.Holder(3, 0) == 0);
  CHECK(s.Holder(0, 1) == 1);
  CHECK(s.Holder(1, 1) == 3);
  CHECK(s.Holder(2, 1) == 1);
  CHECK(s.Holder(3, 1) == 1);
  CHECK(s.Holder(0, 2) == -1);
  CHECK(s.Holder(3, 2) == 0);
  for (uint32_t n = 0; n < 4; ++n) CHECK(s.Holder(n, 12) == -1);
}

TEST_CASE("NoPFS: the prefetcher fills the staging buffer in access order, across epochs",
          "[sim]") {
  // One rank reads files 0, 1, 2 (100 B, 1 s each from the shared file
  // system) every epoch, one file a batch, one worker one batch ahead, 2.5 s
  // of compute a step. The prefetcher (one thread, 200 B of buffer) starts at
  // the launch: file 0 at 0-1 (the loader waits for it), file 1 at 1-2 (the
  // loader waits again), file 2 at 2-3; epoch 1's file 0 at 3-4 and file 1 at
  // 4-5, before the job's epoch 1. The buffer is then full (file 2 was not
  // taken until step 1's dispatch at 3.5): epoch 1's file 2 starts when the
  // loader takes epoch 1's file 0 at 8.5, at 8.5-9.5, and is there before
  // step 2 asks for it at 11. Steps: 1-3.5, 3.5-6, 6-8.5, then 8.5-16.
  const std::vector<uint64_t> bytes(3, 100);
  FixedOrder order(3, {{0, 1, 2}});
  const JobSpec job{
      .batch_size = 1, .compute_seconds = 2.5, .epochs = 2, .workers = 1, .prefetch_factor = 1};
  for (const uint64_t ram : {0, 100}) {
    INFO("RAM tier " << ram);
    EventLoop loop;
    SharedDevice fs(&loop, DeviceSpec{.bandwidth = 100});
    auto nopfs = NopfsSource::Create(&loop, &fs, &bytes, order, job,
                                     NopfsSpec{.ram_bytes = ram,
                                               .ssd_bytes = 0,
                                               .node = {.ssd = {}, .link = {}},
                                               .staging_bytes = 200,
                                               .prefetch_threads = 1});
    REQUIRE(nopfs.ok());
    auto r = RunJob(&loop, job, order, nopfs->get());
    REQUIRE(r.ok());
    REQUIRE(r->size() == 2);
    CHECK((*r)[0].seconds == Approx(8.5));
    CHECK((*r)[1].seconds == Approx(7.5));
    // The loader took every access once, from the buffer; the prefetcher
    // read each once: epoch 0's and two of epoch 1's before epoch 1 began.
    for (const EpochResult& e : *r) {
      CHECK(e.sources.reads == 3);
      CHECK(e.sources.ram_bytes == 300);
      CHECK(e.sources.local_bytes + e.sources.peer_bytes + e.sources.shared_fs_bytes == 0);
    }
    CHECK((*r)[0].prefetched.reads == 5);
    CHECK((*r)[1].prefetched.reads == 1);
    const SourceCounters& p0 = (*r)[0].prefetched;
    const SourceCounters& p1 = (*r)[1].prefetched;
    // With 100 B of RAM tier, file 0 is kept there at its first read, and
    // epoch 1's read of it comes from there (at 3: it waits in the buffer).
    CHECK(p0.ram_bytes == ram);
    CHECK(p0.shared_fs_bytes == 500 - ram);
    CHECK(p1.ram_bytes == 0);
    CHECK(p1.shared_fs_bytes == 100);
    CHECK((*nopfs)->staged() == 0);
  }
}

TEST_CASE("NoPFS: without the prefetcher the loader reads the tiers; a file past the buffer waits",
          "[sim]") {
  const std::vector<uint64_t> bytes(3, 100);
  FixedOrder order(3, {{0, 1, 2}});
  const JobSpec job{
      .batch_size = 1, .compute_seconds = 2.5, .epochs = 2, .workers = 1, .prefetch_factor = 1};
  // Off: the loader reads as it is asked, 1 s a file, its batch ahead:
  // 0-1, then steps 1-3.5, 3.5-6, 6-8.5; epoch 1 the same, 8.5 s.
  {
    EventLoop loop;
    SharedDevice fs(&loop, DeviceSpec{.bandwidth = 100});
    auto nopfs = NopfsSource::Create(
        &loop, &fs, &bytes, order, job,
        NopfsSpec{.ram_bytes = 0, .ssd_bytes = 0, .node = {}, .prefetcher = false});
    REQUIRE(nopfs.ok());
    auto r = RunJob(&loop, job, order, nopfs->get());
    REQUIRE(r.ok());
    CHECK((*r)[0].seconds == Approx(8.5));
    CHECK((*r)[1].seconds == Approx(8.5));
    CHECK((*r)[1].sources.shared_fs_bytes == 300);
    CHECK((*r)[0].prefetched.reads + (*r)[1].prefetched.reads == 0);
  }
  // A buffer smaller than a file takes one file at a time, when it is empty.
  {
    EventLoop loop;
    SharedDevice fs(&loop, DeviceSpec{.bandwidth = 100});
    auto nopfs = NopfsSource::Create(
        &loop, &fs, &bytes, order, job,
        NopfsSpec{.ram_bytes = 0, .ssd_bytes = 0, .node = {}, .staging_bytes = 1});
    REQUIRE(nopfs.ok());
    auto r = RunJob(&loop, job, order, nopfs->get());
    REQUIRE(r.ok());
    CHECK((*r)[0].sources.ram_bytes + (*r)[1].sources.ram_bytes == 600);
    CHECK((*r)[0].prefetched.shared_fs_bytes + (*r)[1].prefetched.shared_fs_bytes == 600);
    CHECK((*nopfs)->staged() == 0);
  }
  // No threads: refused.
  EventLoop loop;
  SharedDevice fs(&loop, DeviceSpec{.bandwidth = 100});
  CHECK_FALSE(NopfsSource::Create(&loop, &fs, &bytes, order, job,
                                  NopfsSpec{.node = {}, .prefetch_threads = 0})
                  .ok());
}

TEST_CASE("NoPFS: the prefetcher's threads decode; the loader's workers do not", "[sim]") {
  // One rank reads files 0 and 1 (100 B, 100 B/s) as one batch, 0.5 s of
  // decoding a file, no compute. Two threads fetch both at once (done at 2)
  // and decode them (2.5): the epoch is 2.5 s. One thread fetches file 0
  // (0-1), decodes it (1-1.5), then file 1 (1.5-2.5, 2.5-3): 3 s. Without
  // the prefetcher the loader's worker reads and decodes them in turn: 3 s.
  const std::vector<uint64_t> bytes(2, 100);
  FixedOrder order(2, {{0, 1}});
  const JobSpec job{.batch_size = 2,
                    .compute_seconds = 0,
                    .workers = 1,
                    .prefetch_factor = 1,
                    .file_seconds = 0.5};
  for (const auto& [threads, on, want] : std::vector<std::tuple<uint32_t, bool, double>>{
           {2, true, 2.5}, {1, true, 3}, {2, false, 3}}) {
    INFO(threads << " threads, prefetcher " << on);
    EventLoop loop;
    SharedDevice fs(&loop, DeviceSpec{.bandwidth = 100});
    auto nopfs =
        NopfsSource::Create(&loop, &fs, &bytes, order, job,
                            NopfsSpec{.node = {}, .prefetcher = on, .prefetch_threads = threads});
    REQUIRE(nopfs.ok());
    CHECK((*nopfs)->decodes() == on);
    auto r = RunJob(&loop, job, order, nopfs->get());
    REQUIRE(r.ok());
    CHECK((*r)[0].seconds == Approx(want));
  }
}
