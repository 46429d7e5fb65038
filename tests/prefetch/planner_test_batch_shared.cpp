// The planner in batch mode with several readers of one stream (shared,
// concurrent, an epoch apart), driven by the Keras fit reads, and with
// alternatives.
#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <numeric>
#include <random>
#include <thread>

#include "tests/prefetch/planner_batch_job.hpp"

namespace pf = clairfs::prefetch;
using pf::FileId;
using namespace clairfs::prefetch::testing;

TEST_CASE("KerasFitReads: the lead in order, then whole batches in a drawn order",
          "[unit][planner]") {
  std::vector<std::vector<FileId>> lead = {{9, 8}};
  std::vector<std::vector<FileId>> batches = {{0, 1}, {2, 3}, {4, 5}, {6, 7}};
  std::vector<FileId> got = pf::KerasFitReads(lead, batches, 4, 3);
  REQUIRE(got.size() == 10);
  CHECK(got[0] == 9);
  CHECK(got[1] == 8);
  std::vector<FileId> order;
  for (size_t i = 2; i < got.size(); i += 2) {
    CHECK(got[i + 1] == got[i] + 1);  // each batch whole, in its own order
    order.push_back(got[i]);
  }
  CHECK(order != std::vector<FileId>{0, 2, 4, 6});  // this seed does shuffle
  std::sort(order.begin(), order.end());
  CHECK(order == std::vector<FileId>{0, 2, 4, 6});
  CHECK(pf::KerasFitReads({}, batches, 2, 3).size() == 4);  // reads of the candidates
}

TEST_CASE("Batch mode, two readers of one stream: each reads each batch once", "[unit][planner]") {
  for (uint64_t budget_batches : {uint64_t{0}, uint64_t{4}}) {
    INFO("budget batches " << budget_batches << " (0: an epoch)");
    BatchJob job;
    job.lead = 1;
    job.Init();
    clairfs::FakeClock clock;
    const uint64_t budget = budget_batches == 0 ? job.total : budget_batches * job.MaxBatchBytes();
    auto planner = BatchPlanner(job, {0, 0}, budget, 3, clock);
    pf::NodeSim sim(*planner, clock, job.sizes, SimOptions(job, 0, 0));
    for (uint64_t e = 0; e < 3; ++e) sim.RunEpoch({job.Reads(e, 300 + e), job.Reads(e, 400 + e)});
    RequireClean(sim.report());
    pf::PlannerStats s = planner->Stats();
    CHECK(s.deviations == 0);
    CHECK(s.repeat_opens == 0);
    REQUIRE(s.per_epoch.size() == 3);
    for (const pf::EpochCounts& c : s.per_epoch) {
      INFO("epoch " << c.epoch);
      CHECK(c.opens == 2 * (job.files + (c.epoch == 0 ? job.batch : 0)));
      CHECK(c.stalls <= 2 * (job.batches() + 1));
      if (budget_batches == 0 && c.epoch > 0) CHECK(c.ready == c.opens);
    }
    if (budget_batches == 0) {
      // Fetched once for both readers: kept until the second one opened it.
      CHECK(sim.report().loads + s.admissions <= job.files);
    }
    for (const pf::RankPosition& p : planner->Positions()) CHECK(p.epoch == 2);
    CHECK(s.batches_pinned == 2 * 3 * job.batches());
  }
}

TEST_CASE("KerasFlow fit with shuffle drives the planner in batch mode", "[unit][planner]") {
  pf::Listing l;
  for (int i = 0; i < 16; ++i) l.files.push_back("c/" + std::to_string(i) + ".png");
  pf::KerasFlowOptions o;
  o.seed = 4;
  o.batch_size = 4;
  o.protocol = pf::KerasFlowOptions::Protocol::kFit;
  for (bool fit_shuffle : {true, false}) {
    o.fit_shuffle = fit_shuffle;
    auto flow = pf::KerasFlow::Create(l, o);
    REQUIRE(flow.ok());
    pf::PlannerConfig c;
    c.local_ranks = {0};
    c.end_epoch = 2;
    c.batch_size = 4;
    c.budget_bytes = 1 << 20;
    pf::PlannerInput in;
    in.order = pf::OrderSourceFromSampler(*flow);
    in.batches = pf::BatchSourceFromSampler(*flow);
    in.file_of_index.resize(16);
    std::iota(in.file_of_index.begin(), in.file_of_index.end(), 0);
    in.file_size = pf::ShareSizes(std::vector<uint64_t>(16, 100));
    clairfs::FakeClock clock;
    auto p = pf::Planner::Create(c, in, clock);
    REQUIRE(p.ok());
    CHECK((*p)->batch_mode() == fit_shuffle);
    if (!fit_shuffle) continue;
    // The spec batches, then epoch 0's batches backwards: all predicted.
    const std::vector<std::vector<pf::Index>> pre = flow->PreTrainingBatches().value();
    for (const auto& b : pre) {
      for (pf::Index i : b) CHECK((*p)->OnOpen(static_cast<FileId>(i)).predicted);
    }
    auto batches = flow->EpochBatches(0).value();
    std::reverse(batches.begin(), batches.end());
    for (const auto& b : batches) {
      for (pf::Index i : b) CHECK((*p)->OnOpen(static_cast<FileId>(i)).predicted);
    }
    pf::PlannerStats s = (*p)->Stats();
    CHECK(s.deviations == 0);
    REQUIRE(s.per_epoch.size() == 1);
    CHECK(s.per_epoch[0].opens == 16 + 2 * 4);
  }
}

TEST_CASE("Batch mode, shared readers an epoch boundary apart: counts per epoch stay exact",
          "[unit][planner]") {
  BatchJob job;
  job.lead = 1;
  job.Init();
  clairfs::FakeClock clock;
  auto planner = BatchPlanner(job, {0, 0}, job.total, 3, clock);
  pf::NodeSim sim(*planner, clock, job.sizes, SimOptions(job, 0, 0));
  std::vector<FileId> a = job.Reads(0, 1), b = job.Reads(0, 2);
  for (FileId f : job.Reads(1, 3)) a.push_back(f);
  for (FileId f : job.Reads(1, 4)) b.push_back(f);
  // Reader a runs three batches ahead of b: it opens epoch 1's first
  // batches while b finishes epoch 0.
  const size_t ahead = 3 * job.batch;
  std::vector<FileId> opens(a.begin(), a.begin() + static_cast<long>(ahead));
  for (size_t i = 0; i < b.size(); ++i) {
    if (ahead + i < a.size()) opens.push_back(a[ahead + i]);
    opens.push_back(b[i]);
  }
  sim.OpenSequence(opens);
  RequireClean(sim.report());
  pf::PlannerStats s = planner->Stats();
  CHECK(s.deviations == 0);
  CHECK(s.repeat_opens == 0);
  REQUIRE(s.per_epoch.size() == 2);
  // An open of a's in epoch 1 may stand for one of b's in epoch 0 and the
  // other way round, but each epoch holds exactly its reads.
  CHECK(s.per_epoch[0].opens == 2 * (job.files + job.batch));
  CHECK(s.per_epoch[1].opens == 2 * job.files);
  CHECK(s.per_epoch[1].ready == s.per_epoch[1].opens);
}

TEST_CASE("Batch mode: concurrent openers, fetcher and strays keep the budget", "[unit][planner]") {
  BatchJob job;
  job.extra_files = 8;
  job.Init();
  clairfs::FakeClock clock;
  const uint64_t budget = 4 * job.MaxBatchBytes();
  // Two readers of one stream, each on its own thread; the fetcher and a
  // stray reader (files in no batch, external evictions) on two more.
  auto planner = BatchPlanner(job, {0, 0}, budget, 3, clock);
  pf::Planner& p = *planner;
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> over{0};
  auto check = [&] {
    pf::PlannerStats s = p.Stats();
    if (s.resident_bytes + s.in_flight_bytes > s.budget_bytes) ++over;
  };
  std::thread fetcher([&] {
    while (!stop) {
      pf::FetchPlan plan = p.NextFetches(8);
      for (FileId f : plan.fetch) p.OnFetched(f, job.sizes[f]);
      p.Maintain();
      check();
    }
  });
  std::thread stray([&] {
    for (uint64_t i = 0; i < 64 || !stop; ++i) {  // at least 64, however threads run
      FileId f = static_cast<FileId>(job.files + i % job.extra_files);
      if (!p.OnOpen(f).ready && p.Admit(f, job.sizes[f]).admitted) p.OnFetched(f, job.sizes[f]);
      if (i % 32 == 0) p.OnEvicted(static_cast<FileId>(i % job.files));
      p.Positions();
      check();
    }
  });
  std::vector<std::thread> readers;
  for (uint64_t g = 0; g < 2; ++g) {
    readers.emplace_back([&, g] {
      for (uint64_t e = 0; e < 3; ++e) {
        for (FileId f : job.Reads(e, 700 + 10 * g + e)) p.OnOpen(f);
      }
    });
  }
  for (auto& t : readers) t.join();
  stop = true;
  fetcher.join();
  stray.join();
  pf::PlannerStats s = p.Stats();
  CHECK(over == 0);
  // Every stray open is a deviation or a repeat; the readers' opens are
  // deviations only where the two threads ran an epoch apart.
  CHECK(s.opens >= 2 * 3 * job.files + 64);
  CHECK(s.deviations + s.repeat_opens >= 64);
  CHECK(s.resident_bytes + s.in_flight_bytes <= s.budget_bytes);
}

namespace {

// Two alternatives over the 8 files, 2 epochs alike: alternative 0 cuts them
// {0,1} {2,3} {4,5} {6,7}, alternative 1 {1,2} {3,4} {5,6} {7,0}; an epoch
// reads 4 batches of one of them.
std::unique_ptr<pf::Planner> AlternativesPlanner(uint64_t budget, const clairfs::Clock& clock) {
  pf::BatchEpoch e;
  e.batches = {{0, 1}, {2, 3}, {4, 5}, {6, 7}, {1, 2}, {3, 4}, {5, 6}, {7, 0}};
  e.alternative = {0, 0, 0, 0, 1, 1, 1, 1};
  e.reads = 4;
  return SmallPlanner(budget, clock, e, 2);
}

}  // namespace

TEST_CASE("Batch mode, alternatives: the opens pick the one being read", "[unit][planner]") {
  clairfs::FakeClock clock;
  auto planner = AlternativesPlanner(1000, clock);
  pf::Planner& p = *planner;
  for (FileId f : p.NextFetches(100).fetch) CHECK(p.OnFetched(f, 10).empty());
  // Epoch 0 reads alternative 1: {3,4} {7,0} {1,2} {5,6}. The first batch
  // fits both until 7 follows 4 with alternative 0's {4,5} half read.
  for (FileId f : {3, 4, 7, 0, 1, 2, 5, 6}) CHECK(p.OnOpen(f).predicted);
  // Epoch 1 reads alternative 0 in the order {6,7} {0,1} {4,5} {2,3}.
  for (FileId f : {6, 7, 0, 1, 4, 5, 2, 3}) CHECK(p.OnOpen(f).predicted);
  pf::PlannerStats s = p.Stats();
  CHECK(s.deviations == 0);
  REQUIRE(s.per_epoch.size() == 2);
  CHECK(s.per_epoch[0].opens == 8);  // the batch begun in the wrong alternative moved
  CHECK(s.per_epoch[1].opens == 8);
  CHECK(s.batches_pinned >= 8);
}

TEST_CASE("Batch mode, alternatives: a small budget follows the alternative once picked",
          "[unit][planner]") {
  clairfs::FakeClock clock;
  auto planner = AlternativesPlanner(40, clock);  // room for 4 files
  pf::Planner& p = *planner;
  auto fetch_all = [&] {
    std::vector<FileId> got;
    for (int round = 0; round < 8; ++round) {
      pf::FetchPlan plan = p.NextFetches(100);
      if (plan.fetch.empty()) break;
      for (FileId f : plan.fetch) {
        got.push_back(f);
        p.OnFetched(f, 10);
      }
    }
    return got;
  };
  fetch_all();
  // Alternative 1's first batch, then 7: alternative 0 drops out.
  p.OnOpen(3);
  fetch_all();
  p.OnOpen(4);
  fetch_all();
  p.OnOpen(7);
  fetch_all();
  p.OnOpen(0);
  fetch_all();
  // Left to read: {1,2} and {5,6}, both alternative 1's; with room for 4
  // files all four are resident now, whatever alternative 0 wanted.
  for (FileId f : {1, 2, 5, 6}) {
    INFO("file " << f);
    CHECK(p.OnOpen(f).ready);
  }
  pf::PlannerStats s = p.Stats();
  CHECK(s.deviations == 0);
  REQUIRE_FALSE(s.per_epoch.empty());
  CHECK(s.per_epoch[0].opens == 8);
  CHECK(s.peak_used_bytes <= 40);
}
