// The planner in batch mode: epochs known only as sets of batches (Keras
// fit(shuffle=True)), read by simulated readers in a random batch order.
#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <numeric>
#include <random>
#include <thread>

#include "prefetch/keras/keras_flow.hpp"
#include "prefetch/planner/planner.hpp"
#include "tests/support/node_sim.hpp"

namespace pf = clairfs::prefetch;
using pf::FileId;

namespace {

// `files` files (index = file id) of random sizes; epoch e's candidates are a
// permutation drawn from e cut into batches of `batch`; epoch 0 may lead with
// batches read in a known order. Files at or past `files` exist but are in
// no batch.
struct BatchJob {
  uint64_t files = 96;
  uint64_t batch = 8;
  uint64_t lead = 0;   // epoch 0's lead batches (the first of epoch 0's)
  uint64_t reads = 0;  // 0: every candidate
  uint64_t extra_files = 0;
  std::vector<uint64_t> sizes;
  uint64_t total = 0;

  void Init() {
    std::mt19937_64 rng(11);
    for (uint64_t i = 0; i < files + extra_files; ++i) {
      sizes.push_back(std::uniform_int_distribution<uint64_t>(1024, 8 * 1024)(rng));
      if (i < files) total += sizes.back();
    }
  }
  uint64_t batches() const { return files / batch; }
  uint64_t Reads() const { return reads == 0 ? batches() : reads; }
  uint64_t MaxBatchBytes() const {
    uint64_t m = *std::max_element(sizes.begin(), sizes.begin() + static_cast<long>(files));
    return m * batch;
  }

  std::vector<std::vector<pf::Index>> Batches(uint64_t epoch) const {
    std::vector<pf::Index> perm(files);
    std::iota(perm.begin(), perm.end(), 0);
    std::mt19937_64 rng(1000 + epoch);
    std::shuffle(perm.begin(), perm.end(), rng);
    std::vector<std::vector<pf::Index>> out;
    for (uint64_t b = 0; b < batches(); ++b) {
      out.emplace_back(perm.begin() + static_cast<long>(b * batch),
                       perm.begin() + static_cast<long>((b + 1) * batch));
    }
    return out;
  }
  pf::BatchEpoch Epoch(uint64_t epoch) const {
    pf::BatchEpoch e;
    e.batches = Batches(epoch);
    e.reads = Reads();
    if (epoch == 0) {
      // Like Keras' spec batches: a different permutation's first batches.
      std::vector<std::vector<pf::Index>> pre = Batches(999);
      e.lead.assign(pre.begin(), pre.begin() + static_cast<long>(lead));
    }
    return e;
  }
  static std::vector<std::vector<FileId>> Files(const std::vector<std::vector<pf::Index>>& in) {
    std::vector<std::vector<FileId>> out;
    for (const auto& b : in) out.emplace_back(b.begin(), b.end());
    return out;
  }
  // What one reader opens in `epoch`, its batch order drawn from `seed`.
  std::vector<FileId> Reads(uint64_t epoch, uint64_t seed) const {
    pf::BatchEpoch e = Epoch(epoch);
    return pf::KerasFitReads(Files(e.lead), Files(e.batches), e.reads, seed);
  }
};

std::unique_ptr<pf::Planner> BatchPlanner(const BatchJob& job, std::vector<uint64_t> ranks,
                                          uint64_t budget, uint64_t epochs,
                                          const clairfs::Clock& clock, uint64_t workers = 0) {
  pf::PlannerConfig c;
  c.local_ranks = std::move(ranks);
  c.end_epoch = epochs;
  c.batch_size = job.batch;
  c.num_workers = workers;
  c.budget_bytes = budget;
  pf::PlannerInput in;
  in.batches = [&job](uint64_t, uint64_t epoch) {
    return clairfs::Result<std::optional<pf::BatchEpoch>>(
        std::optional<pf::BatchEpoch>(job.Epoch(epoch)));
  };
  in.order = [&job](const std::vector<uint64_t>& ranks, uint64_t epoch) {
    // Batch-index order: a listing, not the read order (unused in batch mode).
    std::vector<pf::Index> all;
    for (const auto& b : job.Batches(epoch)) all.insert(all.end(), b.begin(), b.end());
    return clairfs::Result<std::vector<std::vector<pf::Index>>>(
        std::vector<std::vector<pf::Index>>(ranks.size(), all));
  };
  in.file_of_index.resize(job.files + job.extra_files);
  std::iota(in.file_of_index.begin(), in.file_of_index.end(), 0);
  in.file_size = job.sizes;
  auto p = pf::Planner::Create(c, in, clock);
  REQUIRE(p.ok());
  REQUIRE(p.value()->batch_mode());
  return std::move(p).value();
}

void RequireClean(const pf::NodeSimReport& r) {
  INFO(r.first_problem);
  REQUIRE(r.budget_violations == 0);
  REQUIRE(r.model_mismatches == 0);
}

pf::NodeSimOptions SimOptions(const BatchJob& job, uint64_t workers, uint64_t delay) {
  pf::NodeSimOptions o;
  o.loader.batch_size = job.batch;
  o.loader.num_workers = workers;
  o.loader.prefetch_factor = 2;
  o.fetch_delay_steps = delay;
  o.fetches_per_step = 16;
  return o;
}

}  // namespace

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

namespace {

// 8 files of 10 bytes in batches of 2, `epochs` epochs alike (default: one,
// the 4 batches {0,1} {2,3} {4,5} {6,7}, all read), no protection of recently
// opened files: only batch pins protect files.
pf::BatchEpoch FourBatches() {
  pf::BatchEpoch e;
  e.batches = {{0, 1}, {2, 3}, {4, 5}, {6, 7}};
  e.reads = 4;
  return e;
}

std::unique_ptr<pf::Planner> SmallPlanner(uint64_t budget, const clairfs::Clock& clock,
                                          pf::BatchEpoch epoch = FourBatches(),
                                          uint64_t epochs = 1) {
  pf::PlannerConfig c;
  c.local_ranks = {0};
  c.end_epoch = epochs;
  c.batch_size = 2;
  c.budget_bytes = budget;
  c.pin_recent_opens = 0;
  pf::PlannerInput in;
  in.batches = [epoch](uint64_t, uint64_t) {
    return clairfs::Result<std::optional<pf::BatchEpoch>>(std::optional<pf::BatchEpoch>(epoch));
  };
  in.order = [](const std::vector<uint64_t>&, uint64_t) {
    return clairfs::Result<std::vector<std::vector<pf::Index>>>(
        std::vector<std::vector<pf::Index>>{{0, 1, 2, 3, 4, 5, 6, 7}});
  };
  in.file_of_index = {0, 1, 2, 3, 4, 5, 6, 7};
  in.file_size.assign(8, 10);
  auto created = pf::Planner::Create(c, in, clock);
  REQUIRE(created.ok());
  REQUIRE((*created)->batch_mode());
  return std::move(created).value();
}

}  // namespace

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
    in.file_size.assign(16, 100);
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
