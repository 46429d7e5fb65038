// clairfs's replicas in the simulator (clairfs.replicas): every holder of a
// partition stages its own copy, as the daemon's Stager does for the
// partitions fs::Ownership gives it; reads still go to the home.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "prefetch/torch/distributed_sampler.hpp"
#include "tests/tools/sim/order_bytes.hpp"
#include "tools/sim/clairfs_source.hpp"
#include "tools/sim/job.hpp"
#include "tools/sim/job_order.hpp"
#include "tools/sim/sim_config.hpp"
#include "tools/sim/simulate.hpp"

using namespace clairfs;
using namespace clairfs::sim;

namespace {

constexpr uint64_t kK = 1024, kM = 1024 * 1024;

// A job of `nodes` nodes x 1 rank starting `start` seconds after the launch.
JobSpec Job(uint32_t nodes, double start) {
  return JobSpec{.nodes = nodes,
                 .ranks_per_node = 1,
                 .batch_size = 1,
                 .compute_seconds = 0.01,
                 .epochs = 1,
                 .start_seconds = start};
}

// The cases worked by hand: two contiguous partitions homed p mod N, one
// copying thread, partitions in turn, no RAM, SSDs at 100,000,000 B/s.
ClairfsSpec HandSpec(uint32_t replicas) {
  return ClairfsSpec{.partitions = 2,
                     .placement = "contiguous",
                     .homes_by_reader = false,
                     .replicas = replicas,
                     .ram_bytes = 0,
                     .stage_threads = 1,
                     .stage_first_use = false,
                     .node = {.ssd = {.bandwidth = 1e8}, .link = {}}};
}

}  // namespace

TEST_CASE("replicas: staging worked by hand", "[sim]") {
  // Two nodes, four files of 1,000,000 bytes in two contiguous partitions
  // (files 0-1 and 2-3), homed on nodes 0 and 1 (p mod N), one copying
  // thread, partitions in turn, no RAM (nothing fetched) and the job long
  // after staging. The shared file system gives 1,000,000 B/s shared by the
  // requests in progress, the SSDs 100,000,000 B/s.
  //
  // replicas 1: each node reads its partition, 2,000,000 bytes in one chunk,
  // beside the other's (500,000 B/s each): 4 s, then 0.02 s onto its SSD.
  // replicas 2: each node holds both partitions and copies them in turn
  // (ascending, node 1 its replica of partition 0 first): two such rounds,
  // 8.04 s; twice the shared file system's bytes and every SSD's.
  const std::vector<uint64_t> bytes(4, 1'000'000);
  const JobSpec job = Job(2, 100);
  prefetch::DistributedSamplerOptions o;
  o.num_replicas = 2;
  auto sampler = prefetch::DistributedSampler::Create(bytes.size(), o);
  REQUIRE(sampler.ok());
  struct Want {
    uint32_t replicas;
    double staging;
    uint64_t fs_bytes, per_ssd;
  };
  // 3 replicas on 2 nodes are 2, as fs::Ownership clamps them.
  for (const Want& w : {Want{1, 4.02, 4'000'000, 2'000'000}, Want{2, 8.04, 8'000'000, 4'000'000},
                        Want{3, 8.04, 8'000'000, 4'000'000}}) {
    INFO("replicas " << w.replicas);
    EventLoop loop;
    SharedDevice fs(&loop, DeviceSpec{.bandwidth = 1e6});
    const ClairfsSpec spec = HandSpec(w.replicas);
    auto source = ClairfsSource::Create(&loop, &fs, &bytes, *sampler, job, spec);
    REQUIRE(source.ok());
    ClairfsSource& s = **source;
    CHECK(s.ownership().replicas() == std::min(w.replicas, 2u));
    REQUIRE(RunJob(&loop, job, *sampler, &s).ok());
    CHECK(s.staging_seconds() == Approx(w.staging));
    CHECK(fs.counters().bytes == w.fs_bytes);
    CHECK(fs.counters().requests == w.fs_bytes / 2'000'000);  // a partition a chunk
    CHECK(s.ssd_written(0) == w.per_ssd);
    CHECK(s.ssd_written(1) == w.per_ssd);
    // The job's reads, after staging, are as before: each from its home.
    CHECK(s.prefetched().reads == 0);
    CHECK(s.counters().shared_fs_bytes == 0);
    CHECK(s.counters().local_bytes + s.counters().peer_bytes == 4'000'000);
  }
}

TEST_CASE("replicas: a holder takes its partitions in ascending order, replicas among them",
          "[sim]") {
  // The case above with 2 replicas, the job's reads made by hand at 5 s:
  // node 0 copied its own partition 0 first (in at 4.02 s), so its read of
  // file 0 is from its SSD by 5.01 s; node 1 copied its replica of partition
  // 0 first and its own partition 1 from 4.02 s to 8.04 s, so its read of
  // file 2 waits for that chunk and is done at 8.05 s. With 1 replica both
  // are done at 5.01 s.
  const std::vector<uint64_t> bytes(4, 1'000'000);
  const JobSpec job = Job(2, 100);
  prefetch::DistributedSamplerOptions o;
  o.num_replicas = 2;
  auto sampler = prefetch::DistributedSampler::Create(bytes.size(), o);
  REQUIRE(sampler.ok());
  for (const auto& [replicas, node1_done] : {std::pair{1u, 5.01}, {2u, 8.05}}) {
    INFO("replicas " << replicas);
    EventLoop loop;
    SharedDevice fs(&loop, DeviceSpec{.bandwidth = 1e6});
    const ClairfsSpec spec = HandSpec(replicas);
    auto source = ClairfsSource::Create(&loop, &fs, &bytes, *sampler, job, spec);
    REQUIRE(source.ok());
    ClairfsSource& s = **source;
    s.Launch();
    double done0 = -1, done1 = -1;
    loop.After(5, [&] {
      s.Read(0, 0, [&] { done0 = loop.now(); });
      s.Read(1, 2, [&] { done1 = loop.now(); });
    });
    loop.Run();
    CHECK(done0 == Approx(5.01));
    CHECK(done1 == Approx(node1_done));
    CHECK(s.counters().local_bytes == 2'000'000);  // both from their own SSD
  }
}

TEST_CASE("replicas: a holder's first-use ranges are its partitions' in the one order", "[sim]") {
  // Three nodes, replicas 2: node n holds the partitions homed on n and on
  // n - 1, and copies the ranges of both, each partition's in the order
  // its home has them.
  const uint64_t files = 60;
  const std::vector<uint64_t> bytes(files, 700 * kK);
  const JobSpec job = Job(3, 100);
  prefetch::DistributedSamplerOptions o;
  o.num_replicas = 3;
  o.seed = 3;
  auto sampler = prefetch::DistributedSampler::Create(files, o);
  REQUIRE(sampler.ok());
  const auto make = [&](uint32_t replicas, EventLoop* loop, SharedDevice* fs) {
    ClairfsSpec spec{.partitions = 6, .replicas = replicas, .stage_first_use = true, .node = {}};
    auto source = ClairfsSource::Create(loop, fs, &bytes, *sampler, job, spec);
    REQUIRE(source.ok());
    return std::move(source).value();
  };
  EventLoop loop;
  SharedDevice fs(&loop, DeviceSpec{.bandwidth = 50e6});
  auto one = make(1, &loop, &fs);
  auto two = make(2, &loop, &fs);
  const auto same = [](const FirstUseUnit& a, const FirstUseUnit& b) {
    return a.partition == b.partition && a.begin == b.begin && a.end == b.end &&
           a.bytes == b.bytes && a.piece == b.piece && a.offset == b.offset;
  };
  for (uint32_t n = 0; n < 3; ++n) {
    INFO("node " << n);
    const uint32_t before = (n + 2) % 3;
    std::vector<FirstUseUnit> own, replica;
    for (const FirstUseUnit& u : two->first_use_units(n)) {
      const int home = two->ownership().Owners(u.partition)[0];
      REQUIRE((home == static_cast<int>(n) || home == static_cast<int>(before)));
      (home == static_cast<int>(n) ? own : replica).push_back(u);
    }
    REQUIRE(own.size() == one->first_use_units(n).size());
    REQUIRE(replica.size() == one->first_use_units(before).size());
    for (size_t i = 0; i < own.size(); ++i) CHECK(same(own[i], one->first_use_units(n)[i]));
    for (size_t i = 0; i < replica.size(); ++i) {
      CHECK(same(replica[i], one->first_use_units(before)[i]));
    }
  }
}

TEST_CASE("replicas: each copy's bytes once from the shared file system, each access once",
          "[sim]") {
  // Shapes that stage in pieces and in chunks, reads racing staging (the
  // job at once) and not (the job after staging): the shared file system
  // gives K x the dataset whoever reads it (a read through a home lands in
  // the home's copy), the job's reads add up to its order, and the later
  // epoch reads nothing from the shared file system.
  for (const char* shape : {"nodes: 2, ranks_per_node: 1", "nodes: 3, ranks_per_node: 2",
                            "nodes: 4, ranks_per_node: 1, start_seconds: 60"}) {
    for (const char* clairfs :
         {"stage_chunk: 300K", "stage_threads: 1, stage_order: pack",
          "stage_threads: 5, stage_chunk: 300K, stage_yield_ms: 0", "homes: modulo"}) {
      for (const uint32_t replicas : {1u, 2u, 3u}) {
        INFO(shape << "; " << clairfs << "; replicas " << replicas);
        auto c = ParseSimConfig(std::string("job: {") + shape +
                                ", batch_size: 4, compute_seconds: 0.002, epochs: 2}\n"
                                "dataset: {files: 101, file_size: 150K, file_size_stdev: 200K}\n"
                                "shared_fs: {bandwidth: 100M, iops: 500, open_latency_ms: 0}\n"
                                "node: {ram: 8M}\nfanstore: {partitions: 5}\n"
                                "clairfs: {replicas: " +
                                std::to_string(replicas) + ", " + clairfs + "}\n");
        REQUIRE(c.ok());
        const auto sizes = DatasetSizes(*c);
        uint64_t all = 0;
        for (uint64_t s : sizes) all += s;
        auto run = RunPolicy(*c, "clairfs", sizes);
        REQUIRE(run.ok());
        const uint64_t copies = std::min(replicas, c->job.nodes);
        CHECK(run->shared_fs_bytes == copies * all);
        CHECK(run->staging_seconds > 0);
        auto order = MakeJobOrder(*c);
        REQUIRE(order.ok());
        for (uint32_t e = 0; e < 2; ++e) {
          const SourceCounters& x = run->epochs[e].sources;
          CHECK(x.ram_bytes + x.local_bytes + x.peer_bytes + x.shared_fs_bytes ==
                testing::OrderBytes(*order->sampler, e, sizes));
        }
        CHECK(run->epochs[1].sources.shared_fs_bytes + run->epochs[1].prefetched.shared_fs_bytes ==
              0);
        if (c->job.start_seconds > 0) {
          // Staged before the job: none of its reads goes to the shared file
          // system (the planners' fetches at the launch still may, through
          // the homes, whose copies keep those bytes).
          CHECK(run->staging_seconds < c->job.start_seconds);
          CHECK(run->epochs[0].sources.shared_fs_bytes == 0);
        }
      }
    }
  }
}

TEST_CASE("replicas: the job's reads are the same once staging is done", "[sim]") {
  // The job after staging: with 2 replicas every read goes where it went
  // with 1, the epochs take the same time; only staging is longer.
  const auto run = [](uint32_t replicas) {
    auto c = ParseSimConfig(
        "job: {nodes: 4, ranks_per_node: 2, batch_size: 4, compute_seconds: 0.002, epochs: 2,"
        " start_seconds: 30}\n"
        "dataset: {files: 300, file_size: 100K, file_size_stdev: 50K}\n"
        "shared_fs: {bandwidth: 50M, iops: 500}\nnode: {ram: 4M}\n"
        "clairfs: {replicas: " +
        std::to_string(replicas) + "}\n");
    REQUIRE(c.ok());
    auto r = RunPolicy(*c, "clairfs", DatasetSizes(*c));
    REQUIRE(r.ok());
    return std::move(r).value();
  };
  const PolicyRun one = run(1), two = run(2);
  CHECK(two.staging_seconds > one.staging_seconds);
  CHECK(two.shared_fs_bytes == 2 * one.shared_fs_bytes);
  REQUIRE(one.epochs.size() == two.epochs.size());
  for (size_t e = 0; e < one.epochs.size(); ++e) {
    INFO("epoch " << e);
    CHECK(one.epochs[e].seconds == two.epochs[e].seconds);
    CHECK(one.epochs[e].sources.ram_bytes == two.epochs[e].sources.ram_bytes);
    CHECK(one.epochs[e].sources.local_bytes == two.epochs[e].sources.local_bytes);
    CHECK(one.epochs[e].sources.peer_bytes == two.epochs[e].sources.peer_bytes);
    CHECK(one.epochs[e].sources.shared_fs_bytes == two.epochs[e].sources.shared_fs_bytes);
    CHECK(one.epochs[e].prefetched.reads == two.epochs[e].prefetched.reads);
  }
}

TEST_CASE("clairfs.replicas: 1 by default, a count of at least 1", "[sim]") {
  auto d = ParseSimConfig("");
  REQUIRE(d.ok());
  CHECK(d->replicas == 1);
  auto three = ParseSimConfig("clairfs: {replicas: 3}");
  REQUIRE(three.ok());
  CHECK(three->replicas == 3);
  for (const char* bad : {"0", "two", "-1", "1.5", "4294967296", "''"}) {
    INFO(bad);
    auto c = ParseSimConfig(std::string("clairfs: {replicas: ") + bad + "}");
    REQUIRE_FALSE(c.ok());
    CHECK(c.status().message().find("clairfs.replicas: bad value") != std::string::npos);
  }
  // Reported with the file's other problems.
  auto both = ParseSimConfig("clairfs: {replicas: 0, stage_threads: 0}");
  REQUIRE_FALSE(both.ok());
  CHECK(both.status().message().find("clairfs.replicas: bad value '0'") != std::string::npos);
  CHECK(both.status().message().find("clairfs.stage_threads: bad value '0'") != std::string::npos);
}
