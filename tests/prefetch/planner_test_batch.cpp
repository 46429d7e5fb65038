// The planner in batch mode, one reader: epochs known only as sets of batches
// (Keras fit(shuffle=True)), read in a random batch order; pins, budgets,
// deviations. Several readers, the Keras drivers and alternatives:
// planner_test_batch_shared.cpp.
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

TEST_CASE("Batch mode: pinned batches first, whole batches in order, pins never evicted",
          "[unit][planner]") {
  clairfs::FakeClock clock;
  auto planner = SmallPlanner(40, clock);  // room for 4 files
  pf::Planner& p = *planner;

  // Nothing begun: the candidates in batch order, as whole batches as fit.
  pf::FetchPlan plan = p.NextFetches(100);
  CHECK(plan.fetch == std::vector<FileId>{0, 1, 2, 3});
  CHECK(plan.evict.empty());
  CHECK(plan.room_bound);
  for (FileId f : plan.fetch) CHECK(p.OnFetched(f, 10).empty());

  // The reader begins batch 3: its other file comes first, room taken from
  // the batch furthest in the order (batch 1).
  pf::OpenResult r = p.OnOpen(6);
  CHECK_FALSE(r.ready);
  CHECK(r.predicted);
  plan = p.NextFetches(100);
  CHECK(plan.fetch == std::vector<FileId>{7});
  REQUIRE(plan.evict.size() == 1);
  CHECK((plan.evict[0] == 2 || plan.evict[0] == 3));
  CHECK(p.OnFetched(7, 10).empty());
  CHECK(p.Stats().batches_pinned == 1);
  CHECK(p.Stats().batches_ready == 0);

  // Batch 2 begins before 3 is finished: it may take batch 1 and 0's place,
  // never file 7 (3's unopened file).
  r = p.OnOpen(4);
  CHECK(r.predicted);
  plan = p.NextFetches(100);
  CHECK(plan.fetch == std::vector<FileId>{5});
  REQUIRE(plan.evict.size() == 1);
  CHECK(plan.evict[0] != 7);
  CHECK(p.OnFetched(5, 10).empty());
  CHECK(p.Victim() != std::optional<FileId>(7));
  CHECK(p.Victim() != std::optional<FileId>(5));

  // The rest of both batches: inside begun batches, never deviations.
  CHECK(p.OnOpen(7).ready);
  CHECK(p.OnOpen(5).ready);
  pf::PlannerStats s = p.Stats();
  CHECK(s.deviations == 0);
  CHECK(s.predicted_opens == 4);
  CHECK(s.resyncs == 0);
  CHECK(s.batch_mode);
  REQUIRE(s.per_epoch.size() == 1);
  CHECK(s.per_epoch[0].opens == 4);
  CHECK(s.per_epoch[0].ready == 2);
  CHECK(s.per_epoch[0].stalls == 2);
  REQUIRE(p.Positions().size() == 1);
  CHECK(p.Positions()[0].offset == 2);  // two of the four reads begun
}

TEST_CASE("Batch mode: a pinned batch's file never makes room from another pinned batch",
          "[unit][planner]") {
  clairfs::FakeClock clock;
  auto planner = SmallPlanner(20, clock);  // room for 2 files
  pf::Planner& p = *planner;
  pf::FetchPlan plan = p.NextFetches(100);
  CHECK(plan.fetch == std::vector<FileId>{0, 1});
  for (FileId f : plan.fetch) CHECK(p.OnFetched(f, 10).empty());
  p.OnOpen(6);  // batch 3 begun first, then batch 2
  p.OnOpen(4);
  plan = p.NextFetches(100);
  CHECK(plan.fetch == std::vector<FileId>{7, 5});  // in the order they were begun
  std::sort(plan.evict.begin(), plan.evict.end());
  CHECK(plan.evict == std::vector<FileId>{0, 1});
  CHECK(p.OnFetched(5, 10).empty());
  // File 7 turns out twice as large as reserved: the room is not taken from
  // batch 2's unopened file 5 (begun later): 7 itself goes.
  CHECK(p.OnFetched(7, 20) == std::vector<FileId>{7});
  CHECK(p.Stats().resident_files == 1);
  CHECK(p.OnOpen(5).ready);
}

TEST_CASE("Batch mode, budget for an epoch: every open ready after epoch 0, no deviation",
          "[unit][planner]") {
  for (uint64_t workers : {0, 2}) {
    for (uint64_t delay : {0, 3}) {
      INFO("workers " << workers << " fetch delay " << delay);
      BatchJob job;
      job.lead = 2;
      job.Init();
      clairfs::FakeClock clock;
      auto planner = BatchPlanner(job, {0}, job.total, 4, clock, workers);
      pf::NodeSim sim(*planner, clock, job.sizes, SimOptions(job, workers, delay));
      for (uint64_t e = 0; e < 4; ++e) sim.RunEpoch({job.Reads(e, 50 + e)});
      RequireClean(sim.report());
      pf::PlannerStats s = planner->Stats();
      CHECK(s.deviations == 0);
      CHECK(s.repeat_opens == 0);
      CHECK(s.resyncs == 0);
      CHECK_FALSE(s.lost);
      CHECK(s.predicted_opens == s.opens);
      REQUIRE(s.per_epoch.size() == 4);
      for (const pf::EpochCounts& c : s.per_epoch) {
        INFO("epoch " << c.epoch);
        CHECK(c.opens == job.files + (c.epoch == 0 ? job.lead * job.batch : 0));
        CHECK(c.ready + c.stalls == c.opens);
        CHECK(c.deviations == 0);
        CHECK(c.resyncs == 0);
        if (c.epoch > 0) {
          CHECK(c.ready == c.opens);
          CHECK(c.stalls == 0);
        }
      }
      // Each file came in once: the budget kept the epoch.
      CHECK(sim.report().loads + s.admissions <= job.files);
      CHECK(s.batches_pinned == 4 * job.batches());
      CHECK(planner->Positions()[0].epoch == 3);
    }
  }
}

TEST_CASE("Batch mode, budget for 3 batches: no stall beyond each batch's first open",
          "[unit][planner]") {
  BatchJob job;
  job.Init();
  clairfs::FakeClock clock;
  const uint64_t budget = 3 * job.MaxBatchBytes();
  auto planner = BatchPlanner(job, {0}, budget, 3, clock);
  pf::NodeSim sim(*planner, clock, job.sizes, SimOptions(job, 0, 0));
  for (uint64_t e = 0; e < 3; ++e) sim.RunEpoch({job.Reads(e, 70 + e)});
  RequireClean(sim.report());
  pf::PlannerStats s = planner->Stats();
  CHECK(s.deviations == 0);
  CHECK(s.peak_used_bytes <= budget);
  CHECK(s.evictions > 0);
  REQUIRE(s.per_epoch.size() == 3);
  for (const pf::EpochCounts& c : s.per_epoch) {
    INFO("epoch " << c.epoch);
    CHECK(c.opens == job.files);
    // A begun batch's other files are fetched at once, ahead of anything
    // else: only a batch's first open can find its file missing.
    CHECK(c.stalls <= job.batches());
    CHECK(c.deviations == 0);
  }
  // The candidates held in the budget were sometimes the ones read next.
  CHECK(s.batches_ready > 0);
  CHECK(s.batches_ready < s.batches_pinned);
}

TEST_CASE("Batch mode, budget below one batch: no deadlock, the budget holds", "[unit][planner]") {
  BatchJob job;
  job.Init();
  clairfs::FakeClock clock;
  const uint64_t budget = job.MaxBatchBytes() / 2;
  auto planner = BatchPlanner(job, {0}, budget, 2, clock, 2);
  pf::NodeSim sim(*planner, clock, job.sizes, SimOptions(job, 2, 2));
  for (uint64_t e = 0; e < 2; ++e) sim.RunEpoch({job.Reads(e, 90 + e)});
  RequireClean(sim.report());
  pf::PlannerStats s = planner->Stats();
  CHECK(s.opens == 2 * job.files);
  CHECK(s.deviations == 0);
  CHECK(s.short_budget_stops > 0);  // the budget cannot hold a begun batch
  CHECK(s.peak_used_bytes <= budget);
  // Some opens still found their file: a begun batch's files are fetched
  // as far as the budget goes.
  CHECK(s.ready_opens > 0);
}

TEST_CASE("Batch mode: an open outside every candidate is a deviation, counted by epoch",
          "[unit][planner]") {
  BatchJob job;
  job.extra_files = 4;
  job.Init();
  clairfs::FakeClock clock;
  auto planner = BatchPlanner(job, {0}, job.total, 3, clock);
  pf::NodeSim sim(*planner, clock, job.sizes, SimOptions(job, 0, 0));
  sim.RunEpoch({job.Reads(0, 5)});
  std::vector<FileId> epoch1 = job.Reads(1, 6);
  // Half of epoch 1, a file in no batch, then the rest.
  sim.OpenSequence(std::vector<FileId>(epoch1.begin(), epoch1.begin() + 40));
  sim.OpenSequence({static_cast<FileId>(job.files + 1)});
  sim.OpenSequence(std::vector<FileId>(epoch1.begin() + 40, epoch1.end()));
  RequireClean(sim.report());
  pf::PlannerStats s = planner->Stats();
  CHECK(s.deviations == 1);
  CHECK(s.resyncs == 0);
  CHECK(s.resync_attempts == 0);
  CHECK_FALSE(s.lost);
  REQUIRE(s.per_epoch.size() == 2);
  CHECK(s.per_epoch[0].deviations == 0);
  CHECK(s.per_epoch[1].deviations == 1);
  CHECK(s.per_epoch[1].opens == job.files + 1);
  // Epoch 1 read: the reader is in epoch 2, and another open of a file
  // epoch 1 read is the first of an epoch-2 batch (every file is in every
  // epoch), not a deviation.
  CHECK(planner->Positions()[0].epoch == 2);
  sim.OpenSequence({epoch1[0]});
  s = planner->Stats();
  CHECK(s.deviations == 1);
  REQUIRE(s.per_epoch.size() == 3);
  CHECK(s.per_epoch[2].opens == 1);
}

TEST_CASE("Batch mode: an epoch that reads some of its candidates moves on after its reads",
          "[unit][planner]") {
  BatchJob job;
  job.reads = 5;  // of 12 candidates (steps_per_epoch)
  job.Init();
  clairfs::FakeClock clock;
  auto planner = BatchPlanner(job, {0}, job.total, 4, clock);
  pf::NodeSim sim(*planner, clock, job.sizes, SimOptions(job, 0, 1));
  for (uint64_t e = 0; e < 4; ++e) sim.RunEpoch({job.Reads(e, 20 + e)});
  RequireClean(sim.report());
  pf::PlannerStats s = planner->Stats();
  CHECK(s.deviations == 0);
  REQUIRE(s.per_epoch.size() == 4);
  for (const pf::EpochCounts& c : s.per_epoch) {
    INFO("epoch " << c.epoch);
    CHECK(c.opens == 5 * job.batch);
    if (c.epoch > 0) CHECK(c.ready == c.opens);
  }
  CHECK(planner->Positions()[0].epoch == 3);
}

TEST_CASE("Batch mode: opens the daemon never saw leave no lasting trace", "[unit][planner]") {
  BatchJob job;
  job.Init();
  clairfs::FakeClock clock;
  auto planner = BatchPlanner(job, {0}, job.total, 4, clock);
  pf::NodeSim sim(*planner, clock, job.sizes, SimOptions(job, 0, 0));
  uint64_t seen = 0;
  for (uint64_t e = 0; e < 4; ++e) {
    // Every epoch, the third open of every other batch is lost (as inotify
    // merges events).
    std::vector<FileId> reads = job.Reads(e, 600 + e), opens;
    for (size_t i = 0; i < reads.size(); ++i) {
      if (i % (2 * job.batch) != 2) opens.push_back(reads[i]);
    }
    sim.OpenSequence(opens);
    seen += opens.size();
    CHECK(planner->Stats().epoch == e);
  }
  RequireClean(sim.report());
  pf::PlannerStats s = planner->Stats();
  CHECK(s.opens == seen);
  CHECK(s.deviations == 0);
  REQUIRE(s.per_epoch.size() == 4);
  for (const pf::EpochCounts& c : s.per_epoch) CHECK(c.ready + c.stalls == c.opens);
  CHECK(s.per_epoch[3].ready == s.per_epoch[3].opens);
}

TEST_CASE("Batch mode: a file opened twice inside its batch is a repeat, not the next epoch's",
          "[unit][planner]") {
  BatchJob job;
  job.Init();
  clairfs::FakeClock clock;
  auto planner = BatchPlanner(job, {0}, job.total, 3, clock);
  pf::NodeSim sim(*planner, clock, job.sizes, SimOptions(job, 0, 0));
  uint64_t doubled = 0;
  for (uint64_t e = 0; e < 2; ++e) {
    // Every file but each batch's last one opened twice in a row (the last
    // one's second open cannot be told from a next-epoch batch's first).
    std::vector<FileId> reads = job.Reads(e, 800 + e), opens;
    for (size_t i = 0; i < reads.size(); ++i) {
      opens.push_back(reads[i]);
      if (i % job.batch != job.batch - 1) {
        opens.push_back(reads[i]);
        ++doubled;
      }
    }
    sim.OpenSequence(opens);
  }
  RequireClean(sim.report());
  pf::PlannerStats s = planner->Stats();
  CHECK(s.deviations == 0);
  CHECK(s.repeat_opens == doubled);
  REQUIRE(s.per_epoch.size() == 2);
  CHECK(s.per_epoch[0].opens == job.files);
  CHECK(s.per_epoch[1].opens == job.files);
  CHECK(s.batches_pinned == 2 * job.batches());
  CHECK(planner->Positions()[0].epoch == 2);
}
