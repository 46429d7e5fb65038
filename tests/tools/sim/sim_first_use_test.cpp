// clairfs's staging in the job's first-use order (clairfs.stage_order), as the
// daemon's Stager::FirstUse does it since commit 47423e7.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "prefetch/torch/distributed_sampler.hpp"
#include "tests/tools/sim/order_bytes.hpp"
#include "tools/sim/clairfs_source.hpp"
#include "tools/sim/first_use.hpp"
#include "tools/sim/job.hpp"
#include "tools/sim/sim_config.hpp"
#include "tools/sim/simulate.hpp"

using namespace clairfs;
using namespace clairfs::sim;

namespace {

constexpr uint64_t kK = 1024, kM = 1024 * 1024, kNone = UINT64_MAX;

}  // namespace

TEST_CASE("first-use ranges: the daemon's rule, worked by hand", "[sim]") {
  // Partition 0: files 0-3 and 7; partition 1: files 4, 5, 6, 8 (pack order).
  const std::vector<uint64_t> bytes = {400 * kK, 400 * kK, 1200 * kK, 400 * kK, 5 * kM,
                                       200 * kK, 200 * kK, 1200 * kK, 800 * kK};
  const std::vector<std::vector<uint64_t>> packs = {{0, 1, 2, 3, 7}, {4, 5, 6, 8}};
  const std::vector<uint64_t> step = {5, kNone, 1, 7, 0, 3, kNone, kNone, 9};
  auto units = FirstUseOrder(bytes, packs, step, 4 * kM);
  REQUIRE(units.ok());
  // By the rule (fs::FirstUseUnits' header): a file of >= 1 MiB is its own
  // range, cut into pieces of at most 4 MiB (file 4: 4 MiB and 1 MiB); smaller
  // ones are taken with their pack neighbours until the range holds 1 MiB,
  // at the earliest step among them (0 and 1 at 5, file 1 unread; 5, 6 and 8
  // at 3, reaching 1,200 KiB), a large file ending a run (0-1 before 2); files
  // nobody reads alone are left out (7); ordered by step.
  const std::vector<FirstUseUnit> want = {
      {1, 0, 1, 4 * kM, true},          // step 0: file 4's first piece
      {1, 0, 1, 1 * kM, true, 4 * kM},  // and its second, 4 MiB into the file
      {0, 2, 3, 1200 * kK, false},      // step 1: file 2
      {1, 1, 4, 1200 * kK, false},      // step 3: files 5, 6, 8
      {0, 0, 2, 800 * kK, false},       // step 5: files 0, 1
      {0, 3, 4, 400 * kK, false}};      // step 7: file 3 (the run ends at file 7)
  REQUIRE(units->size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    INFO("unit " << i);
    CHECK((*units)[i].partition == want[i].partition);
    CHECK((*units)[i].begin == want[i].begin);
    CHECK((*units)[i].end == want[i].end);
    CHECK((*units)[i].bytes == want[i].bytes);
    CHECK((*units)[i].piece == want[i].piece);
    CHECK((*units)[i].offset == want[i].offset);
  }
  // A tie in step goes to the lower partition, then the lower offset.
  auto tie = FirstUseOrder({1200 * kK, 1200 * kK, 1200 * kK}, {{2}, {1, 0}}, {4, 4, 4}, 4 * kM);
  REQUIRE(tie.ok());
  REQUIRE(tie->size() == 3);
  CHECK((*tie)[0].partition == 0);
  CHECK((*tie)[1].partition == 1);
  CHECK((*tie)[1].begin == 0);
  CHECK((*tie)[2].begin == 1);
}

TEST_CASE("first-use staging: the job's first files land first, in the order of first reads",
          "[sim]") {
  // One node, two ranks, one copying thread, the job starting long after
  // staging is done: nothing but staging brings a file. 40 files of 1,200
  // KiB, each a range of its own.
  const uint64_t files = 40;
  const std::vector<uint64_t> bytes(files, 1200 * kK);
  JobSpec job{.nodes = 1,
              .ranks_per_node = 2,
              .batch_size = 2,
              .compute_seconds = 0.01,
              .epochs = 1,
              .start_seconds = 100};
  prefetch::DistributedSamplerOptions o;
  o.num_replicas = 2;
  o.seed = 11;
  auto sampler = prefetch::DistributedSampler::Create(files, o);
  REQUIRE(sampler.ok());
  // Each file's first read: its position in either rank's order.
  std::vector<uint64_t> step(files, kNone);
  for (uint64_t rank = 0; rank < 2; ++rank) {
    auto order = sampler->Order(rank, 0);
    REQUIRE(order.ok());
    for (uint64_t i = 0; i < order->size(); ++i) {
      step[(*order)[i]] = std::min(step[(*order)[i]], i);
    }
  }
  const auto landed = [&](bool first_use) {
    EventLoop loop;
    SharedDevice fs(&loop, DeviceSpec{.bandwidth = 50e6});
    ClairfsSpec spec{.partitions = 3, .stage_threads = 1, .stage_first_use = first_use, .node = {}};
    auto source = ClairfsSource::Create(&loop, &fs, &bytes, *sampler, job, spec);
    REQUIRE(source.ok());
    REQUIRE(RunJob(&loop, job, *sampler, source->get()).ok());
    CHECK(fs.counters().bytes == files * 1200 * kK);  // each byte once
    std::vector<uint64_t> steps;
    for (uint64_t f : (*source)->landed_order()) steps.push_back(step[f]);
    return steps;
  };
  const std::vector<uint64_t> first_use = landed(true);
  REQUIRE(first_use.size() == files);
  CHECK(first_use[0] == 0);  // a file one of the ranks reads first
  CHECK(std::is_sorted(first_use.begin(), first_use.end()));
  // In pack order they are not.
  const std::vector<uint64_t> pack = landed(false);
  REQUIRE(pack.size() == files);
  CHECK_FALSE(std::is_sorted(pack.begin(), pack.end()));
}

TEST_CASE("first-use staging: the shared file system gives each byte once, whatever the shape",
          "[sim]") {
  // Small and large files together (stdev 200K around 150K: some of them
  // over a 300K stage_chunk, whose files are cut into pieces; others taken
  // together), RAM for part of the dataset, the job starting at once: reads
  // race staging's ranges.
  for (const char* shape : {"nodes: 1, ranks_per_node: 1", "nodes: 2, ranks_per_node: 1",
                            "nodes: 3, ranks_per_node: 2"}) {
    for (const char* clairfs :
         {"stage_chunk: 300K", "stage_chunk: 4M, stage_yield_ms: 0", "stage_threads: 1",
          "stage_threads: 5, stage_chunk: 300K, stage_yield_ms: 0", "placement: hash",
          "homes: modulo, stage_chunk: 64K"}) {
      INFO(shape << "; " << clairfs);
      auto c = ParseSimConfig(std::string("job: {") + shape +
                              ", batch_size: 4, compute_seconds: 0.002, epochs: 2}\n"
                              "dataset: {files: 157, file_size: 150K, file_size_stdev: 200K}\n"
                              "shared_fs: {bandwidth: 100M, iops: 500, open_latency_ms: 0}\n"
                              "node: {ram: 8M}\nfanstore: {partitions: 5}\n"
                              "clairfs: {stage_order: first-use, " +
                              clairfs + "}\n");
      REQUIRE(c.ok());
      const auto sizes = DatasetSizes(*c);
      uint64_t all = 0;
      for (uint64_t s : sizes) all += s;
      auto run = RunPolicy(*c, "clairfs", sizes);
      REQUIRE(run.ok());
      CHECK(run->shared_fs_bytes == all);
      CHECK(run->staging_seconds > 0);
      CHECK(run->epochs[1].sources.shared_fs_bytes + run->epochs[1].prefetched.shared_fs_bytes ==
            0);
    }
  }
}

TEST_CASE("clairfs.stage_order: first-use by default, pack on request, nothing else", "[sim]") {
  auto d = ParseSimConfig("");
  REQUIRE(d.ok());
  CHECK(d->stage_first_use);
  auto p = ParseSimConfig("clairfs: {stage_order: pack}");
  REQUIRE(p.ok());
  CHECK_FALSE(p->stage_first_use);
  auto bad = ParseSimConfig("clairfs: {stage_order: random}");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("clairfs.stage_order: bad value 'random'") !=
        std::string::npos);
}

TEST_CASE("first-use staging: a read of a file copied in pieces reads only its missing pieces",
          "[sim]") {
  // One node, one rank, one file of four 4 MiB pieces, one copying thread;
  // the shared file system 4 MiB/s, the SSD 40 MiB/s, no IOPS limits, RAM
  // too small for the planner to fetch the file: the job's read below is
  // the only one. By hand: piece 0 from the shared file system 0-1 s, onto
  // the SSD by 1.1 s; piece 1 from 1.1 s. The read at 1.5 s takes the
  // missing pieces 2 and 3 itself, 8 MiB in one read beside piece 1's last
  // 2.4 MiB (2 MiB/s each): piece 1 is through at 2.7 s (on the SSD 2.8),
  // the read's 5.6 MiB left at 4 MiB/s by 4.1 s, when the file is in.
  // Then pieces 0 and 1 from the SSD beside the write of the read's 8 MiB
  // (20 MiB/s each): 8 MiB by 4.5 s. Staged piece by piece instead, the
  // last piece would be in at 4.4 s and the file read from the SSD by 4.8.
  const std::vector<uint64_t> bytes = {16 * kM};
  JobSpec job{.nodes = 1, .ranks_per_node = 1, .batch_size = 1, .epochs = 1};
  prefetch::DistributedSamplerOptions o;
  o.num_replicas = 1;
  auto sampler = prefetch::DistributedSampler::Create(bytes.size(), o);
  REQUIRE(sampler.ok());
  EventLoop loop;
  SharedDevice fs(&loop, DeviceSpec{.bandwidth = 4.0 * kM});
  ClairfsSpec spec{.ram_bytes = kM,
                   .stage_threads = 1,
                   .stage_first_use = true,
                   .node = {.ssd = {.bandwidth = 40.0 * kM}, .link = {}}};
  auto source = ClairfsSource::Create(&loop, &fs, &bytes, *sampler, job, spec);
  REQUIRE(source.ok());
  ClairfsSource& s = **source;
  REQUIRE(s.first_use_units(0).size() == 4);
  s.Launch();
  double done_at = -1;
  loop.After(1.5, [&] { s.Read(0, 0, [&] { done_at = loop.now(); }); });
  loop.Run();
  CHECK(done_at == Approx(4.5));
  CHECK(s.staging_seconds() == Approx(4.1));
  CHECK(s.piece_reads() == 1);
  CHECK(s.prefetched().reads == 0);
  // The read's bytes: the missing half from the shared file system, the
  // staged half from the SSD; the shared file system gave each byte once,
  // in three reads (pieces 0 and 1 by staging, 2 and 3 by the read).
  CHECK(s.counters().shared_fs_bytes == 8 * kM);
  CHECK(s.counters().local_bytes == 8 * kM);
  CHECK(s.counters().ram_bytes + s.counters().peer_bytes == 0);
  CHECK(fs.counters().bytes == 16 * kM);
  CHECK(fs.counters().requests == 3);
}

TEST_CASE("first-use staging: reads racing a large file's pieces keep each byte once", "[sim]") {
  // Files of 0.5-6 MiB in pieces of 1 MiB, RAM for a few, the job starting
  // at once on 1-3 nodes: the job's reads and the planners' fetches meet
  // files with some pieces in. Each byte comes from the shared file system
  // once, and the job's reads add up to what the sampler's order reads.
  for (const auto& [nodes, ranks] : {std::pair{1u, 1u}, {2u, 1u}, {3u, 2u}}) {
    for (const uint32_t threads : {1u, 3u}) {
      INFO(nodes << " nodes x " << ranks << " ranks, " << threads << " copying threads");
      std::vector<uint64_t> bytes(37);
      for (size_t f = 0; f < bytes.size(); ++f) bytes[f] = kM / 2 + (f * 7919 % 11) * 512 * kK;
      uint64_t all = 0;
      for (uint64_t b : bytes) all += b;
      JobSpec job{.nodes = nodes,
                  .ranks_per_node = ranks,
                  .batch_size = 2,
                  .compute_seconds = 0.01,
                  .epochs = 2};
      prefetch::DistributedSamplerOptions o;
      o.num_replicas = nodes * ranks;
      o.seed = 5;
      auto sampler = prefetch::DistributedSampler::Create(bytes.size(), o);
      REQUIRE(sampler.ok());
      EventLoop loop;
      SharedDevice fs(&loop, DeviceSpec{.bandwidth = 100e6, .iops = 500});
      ClairfsSpec spec{.partitions = 2 * nodes,
                       .ram_bytes = 8 * kM,
                       .stage_threads = threads,
                       .stage_chunk = kM,
                       .stage_first_use = true,
                       .node = {.ssd = {.bandwidth = 2e9}, .link = {.bandwidth = 10e9}}};
      auto source = ClairfsSource::Create(&loop, &fs, &bytes, *sampler, job, spec);
      REQUIRE(source.ok());
      auto run = RunJob(&loop, job, *sampler, source->get());
      REQUIRE(run.ok());
      CHECK((*source)->piece_reads() > 0);
      CHECK(fs.counters().bytes == all);
      uint64_t want = 0;
      for (uint32_t e = 0; e < 2; ++e) want += testing::OrderBytes(*sampler, e, bytes);
      const SourceCounters& c = (*source)->counters();
      CHECK(c.ram_bytes + c.local_bytes + c.peer_bytes + c.shared_fs_bytes == want);
    }
  }
}
