// The simulated training job: its loader's read-ahead, the ranks' lockstep
// and what each epoch read, against cases worked out by hand and against the
// real DistributedSampler's orders.
#include <catch2/catch.hpp>
#include <numeric>
#include <string>
#include <tuple>
#include <vector>

#include "prefetch/order/sequential_sampler.hpp"
#include "prefetch/torch/distributed_sampler.hpp"
#include "tests/tools/sim/order_bytes.hpp"
#include "tools/sim/job.hpp"
#include "tools/sim/shared_fs_source.hpp"

using namespace clairfs;
using namespace clairfs::sim;

namespace {

// Every read from node n takes seconds[n], whatever else is read meanwhile.
class FixedSource final : public DataSource {
 public:
  FixedSource(EventLoop* loop, std::vector<double> seconds) : loop_(loop), s_(std::move(seconds)) {}
  void Read(uint32_t node, uint64_t file, EventLoop::Fn done) override {
    counters_.reads++;
    counters_.ram_bytes += 1;
    read.push_back(file);
    loop_->After(s_[node], std::move(done));
  }
  std::vector<uint64_t> read;

 private:
  EventLoop* loop_;
  std::vector<double> s_;
};

// Rank r reads `per_rank` files from r * per_rank on, every epoch.
class BlockSampler final : public prefetch::Sampler {
 public:
  BlockSampler(uint64_t ranks, uint64_t per_rank) : ranks_(ranks), per_(per_rank) {}
  uint64_t world_size() const override { return ranks_; }
  uint64_t dataset_size() const override { return ranks_ * per_; }
  Result<std::vector<prefetch::Index>> Order(uint64_t rank, uint64_t) const override {
    std::vector<prefetch::Index> out(per_);
    std::iota(out.begin(), out.end(), rank * per_);
    return out;
  }

 private:
  uint64_t ranks_, per_;
};

}  // namespace

TEST_CASE("with instant reads an epoch is its steps' compute", "[sim]") {
  EventLoop loop;
  FixedSource source(&loop, {0});
  prefetch::SequentialSampler sampler(10);
  JobSpec job{.batch_size = 3, .compute_seconds = 0.5, .epochs = 2};
  SECTION("a last, partial batch is a step") {
    auto r = RunJob(&loop, job, sampler, &source);
    REQUIRE(r.ok());
    REQUIRE(r->size() == 2);
    for (const EpochResult& e : *r) {
      CHECK(e.steps == 4);
      CHECK(e.seconds == Approx(2.0));
      CHECK(e.stall_fraction == 0);
      CHECK(e.sources.reads == 10);
    }
  }
  SECTION("drop_last drops it") {
    job.drop_last = true;
    auto r = RunJob(&loop, job, sampler, &source);
    REQUIRE(r.ok());
    CHECK((*r)[0].steps == 3);
    CHECK((*r)[0].seconds == Approx(1.5));
    CHECK((*r)[0].sources.reads == 9);
  }
}

TEST_CASE("one worker asking one batch ahead: the rank waits for every read", "[sim]") {
  // Batch 0 is read from 0 to 1 (the rank waits 1 s), batch 1 is asked for
  // when the rank takes batch 0 and read from 1 to 2 while it computes (1 to
  // 1.5): the rank waits 0.5 s; so again for batch 2 (read 2-3, step 3-3.5).
  EventLoop loop;
  FixedSource source(&loop, {1.0});
  prefetch::SequentialSampler sampler(3);
  JobSpec job{.batch_size = 1, .compute_seconds = 0.5, .workers = 1, .prefetch_factor = 1};
  auto r = RunJob(&loop, job, sampler, &source);
  REQUIRE(r.ok());
  CHECK((*r)[0].seconds == Approx(3.5));
  CHECK((*r)[0].stall_fraction == Approx(2.0 / 3.5));
  CHECK(source.read == std::vector<uint64_t>{0, 1, 2});
}

TEST_CASE("ranks step together: a slow node holds every rank back", "[sim]") {
  // Node 0 reads in 0.1 s, node 1 in 1 s; two batches each asked for at once.
  // Step 0: rank 0 waits 0.1 s and is done at 0.6; rank 1 waits 1 s, done at
  // 1.5. Step 1 (from 1.5): rank 0's batch is there (done 2.0); rank 1's is
  // read from 1 to 2, so it waits 0.5 s and is done at 2.5.
  EventLoop loop;
  FixedSource source(&loop, {0.1, 1.0});
  BlockSampler sampler(2, 2);
  JobSpec job{
      .nodes = 2, .batch_size = 1, .compute_seconds = 0.5, .workers = 1, .prefetch_factor = 2};
  auto r = RunJob(&loop, job, sampler, &source);
  REQUIRE(r.ok());
  CHECK((*r)[0].seconds == Approx(2.5));
  CHECK((*r)[0].stall_fraction == Approx((0.1 + 1.0 + 0.5) / (2 * 2.5)));
}

TEST_CASE("workers share a rank's reads; later epochs start when the one before ends", "[sim]") {
  // Two workers, each read 1 s, batch 1, compute 0.1, 4 batches asked for
  // ahead: worker 0 reads batches 0 and 2 (done at 1 and 2), worker 1
  // batches 1 and 3. Steps: 1-1.1, 1.1-1.2, 2-2.1, 2.1-2.2.
  EventLoop loop;
  FixedSource source(&loop, {1.0});
  prefetch::SequentialSampler sampler(4);
  JobSpec job{
      .batch_size = 1, .compute_seconds = 0.1, .epochs = 2, .workers = 2, .prefetch_factor = 2};
  auto r = RunJob(&loop, job, sampler, &source);
  REQUIRE(r.ok());
  for (const EpochResult& e : *r) CHECK(e.seconds == Approx(2.2));
  CHECK(loop.now() == Approx(4.4));
}

TEST_CASE("every epoch reads each file the real sampler gives, its bytes counted once", "[sim]") {
  constexpr uint64_t kFiles = 103;  // not a multiple of the ranks: padded
  std::vector<uint64_t> bytes(kFiles);
  for (uint64_t i = 0; i < kFiles; ++i) bytes[i] = 1000 + 37 * i;
  auto sampler = prefetch::DistributedSampler::Create(
      kFiles, prefetch::DistributedSamplerOptions{.num_replicas = 4, .seed = 5});
  REQUIRE(sampler.ok());
  EventLoop loop;
  SharedDevice fs(&loop, DeviceSpec{.bandwidth = 1e6, .iops = 1000, .latency = 0.001});
  SharedFsSource source(&loop, &fs, &bytes, 2, /*page_cache=*/0);
  JobSpec job{
      .nodes = 2, .ranks_per_node = 2, .batch_size = 8, .compute_seconds = 0.01, .epochs = 3};
  auto r = RunJob(&loop, job, *sampler, &source);
  REQUIRE(r.ok());
  REQUIRE(r->size() == 3);
  uint64_t all = 0;
  for (uint32_t e = 0; e < 3; ++e) {
    const uint64_t want = testing::OrderBytes(*sampler, e, bytes);
    INFO("epoch " << e);
    CHECK((*r)[e].sources.shared_fs_bytes == want);
    CHECK((*r)[e].sources.reads == 4 * sampler->num_samples());
    CHECK((*r)[e].steps == (sampler->num_samples() + 7) / 8);
    CHECK((*r)[e].seconds > 0);
    all += want;
  }
  CHECK(fs.counters().bytes == all);
}

TEST_CASE("a file is reads_per_file requests one after another, then file_seconds of decoding",
          "[sim]") {
  const std::vector<uint64_t> bytes(10, 1000);
  prefetch::SequentialSampler sampler(10);
  // One worker, one batch ahead, no compute: the files one after another. An
  // IOPS-bound device: a request of any size takes 0.01 s.
  JobSpec job{.batch_size = 1, .compute_seconds = 0, .workers = 1, .prefetch_factor = 1};
  for (const auto& [reads, decode, want] :
       {std::tuple{1u, 0.0, 0.1}, std::tuple{4u, 0.0, 0.4}, std::tuple{4u, 0.05, 0.9}}) {
    INFO(reads << " reads, " << decode << " s decoding a file");
    EventLoop loop;
    SharedDevice fs(&loop, DeviceSpec{.iops = 100});
    SharedFsSource source(&loop, &fs, &bytes, 1, /*page_cache=*/0, reads);
    job.file_seconds = decode;
    auto r = RunJob(&loop, job, sampler, &source);
    REQUIRE(r.ok());
    CHECK((*r)[0].seconds == Approx(want));
    CHECK(fs.counters().requests == 10 * reads);
    CHECK(fs.counters().bytes == 10000);  // split, not multiplied
    CHECK((*r)[0].sources.shared_fs_bytes == 10000);
  }
}

TEST_CASE("a node's page cache keeps the files it read, least recently read out first", "[sim]") {
  // Three files of 1000 bytes read in the same order every epoch by one rank.
  const std::vector<uint64_t> bytes(3, 1000);
  prefetch::SequentialSampler sampler(3);
  const JobSpec job{
      .batch_size = 1, .compute_seconds = 0.01, .epochs = 3, .workers = 1, .prefetch_factor = 1};
  struct Case {
    uint64_t page_cache;
    uint64_t requests;     // at the shared file system, over the 3 epochs
    uint64_t later_bytes;  // epochs 1 and 2: from the page cache
  };
  // Room for all 3: only the first epoch goes out. Room for 2: a scan in the
  // same order always finds the file it needs just evicted (LRU's worst
  // case). None: every read goes out.
  for (const Case& c : {Case{3000, 3, 3000}, Case{2999, 9, 0}, Case{0, 9, 0}}) {
    INFO("page cache " << c.page_cache);
    EventLoop loop;
    SharedDevice fs(&loop, DeviceSpec{.iops = 100});
    SharedFsSource source(&loop, &fs, &bytes, 1, c.page_cache);
    auto r = RunJob(&loop, job, sampler, &source);
    REQUIRE(r.ok());
    CHECK(fs.counters().requests == c.requests);
    CHECK((*r)[0].sources.shared_fs_bytes == 3000);
    for (uint32_t e = 1; e < 3; ++e) {
      CHECK((*r)[e].sources.ram_bytes == c.later_bytes);
      CHECK((*r)[e].sources.ram_bytes + (*r)[e].sources.shared_fs_bytes == 3000);
    }
  }
  // Two nodes' caches are their own: what node 0 read is not in node 1's.
  EventLoop loop;
  SharedDevice fs(&loop, DeviceSpec{.iops = 100});
  SharedFsSource source(&loop, &fs, &bytes, 2, 3000);
  bool done = false;
  source.Read(0, 1, [&] { source.Read(1, 1, [&] { source.Read(0, 1, [&] { done = true; }); }); });
  loop.Run();
  CHECK(done);
  CHECK(fs.counters().requests == 2);
  CHECK(source.counters().ram_bytes == 1000);
}

TEST_CASE("a job the order does not fit is refused", "[sim]") {
  EventLoop loop;
  FixedSource source(&loop, {0, 0});
  prefetch::SequentialSampler sampler(4);
  auto r = RunJob(&loop, JobSpec{.nodes = 2}, sampler, &source);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().find("the order is for 1 ranks, the job has 2") != std::string::npos);
  CHECK_FALSE(RunJob(&loop, JobSpec{.workers = 0}, sampler, &source).ok());
}
