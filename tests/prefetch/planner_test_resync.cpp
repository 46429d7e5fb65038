// Tracking and resynchronisation: a jump to another epoch, a validation pass
// of unrelated files, a restart, a reader with a different seed (lost, never
// a crash), and the Keras >= 3.3 read window.
#include <algorithm>
#include <catch2/catch.hpp>
#include <numeric>
#include <random>

#include "prefetch/planner/planner.hpp"
#include "prefetch/torch/distributed_sampler.hpp"
#include "tests/support/node_sim.hpp"

namespace pf = clairfs::prefetch;
using pf::FileId;

namespace {

// 2 local ranks of a world of 2, 2 workers, batch 4; file id = dataset index;
// `extra` further file ids that no sampler index maps to (a validation set).
struct Setup {
  pf::DistributedSampler sampler;
  std::vector<uint64_t> sizes;
  pf::LoaderShape loader{4, 2, 2, false};
  uint64_t n;

  Setup(uint64_t n_files, uint64_t extra, uint64_t seed)
      : sampler(Sampler(n_files, seed)), n(n_files) {
    std::mt19937_64 rng(11);
    for (uint64_t i = 0; i < n_files + extra; ++i) {
      sizes.push_back(std::uniform_int_distribution<uint64_t>(1000, 9000)(rng));
    }
  }
  static pf::DistributedSampler Sampler(uint64_t n, uint64_t seed) {
    pf::DistributedSamplerOptions o;
    o.num_replicas = 2;
    o.seed = seed;
    return pf::DistributedSampler::Create(n, o).value();
  }
  uint64_t Total() const { return std::accumulate(sizes.begin(), sizes.end(), uint64_t{0}); }

  std::unique_ptr<pf::Planner> MakePlanner(uint64_t epochs, uint64_t budget,
                                           const clairfs::Clock& clock, uint64_t start = 0) const {
    pf::PlannerConfig c;
    c.local_ranks = {0, 1};
    c.start_epoch = start;
    c.end_epoch = epochs;
    c.batch_size = loader.batch_size;
    c.num_workers = loader.num_workers;
    c.prefetch_factor = loader.prefetch_factor;
    c.budget_bytes = budget;
    pf::PlannerInput in;
    in.order = pf::OrderSourceFromSampler(sampler);
    for (FileId f = 0; f < n; ++f) in.file_of_index.push_back(f);
    in.file_size = pf::ShareSizes(sizes);
    auto p = pf::Planner::Create(c, in, clock);
    REQUIRE(p.ok());
    return std::move(p).value();
  }
};

// What the two ranks read in `epoch` under `sampler`.
std::vector<std::vector<FileId>> Truth(const pf::DistributedSampler& sampler, uint64_t epoch) {
  std::vector<std::vector<FileId>> out;
  for (uint64_t r = 0; r < 2; ++r) {
    std::vector<pf::Index> order = sampler.Order(r, epoch).value();
    out.emplace_back(order.begin(), order.end());
  }
  return out;
}

double ReadyBetween(const pf::NodeSimReport& r, uint64_t from, uint64_t to) {
  uint64_t n = 0;
  for (uint64_t i = from; i < to; ++i) n += r.ready[i];
  return static_cast<double>(n) / static_cast<double>(to - from);
}

void RequireClean(const pf::NodeSimReport& r) {
  INFO(r.first_problem);
  REQUIRE(r.budget_violations == 0);
  REQUIRE(r.model_mismatches == 0);
}

pf::NodeSimOptions Options(const Setup& s) {
  pf::NodeSimOptions o;
  o.loader = s.loader;
  return o;
}

constexpr uint64_t kN = 2000;  // large enough that chance hits in a window are rare

}  // namespace

TEST_CASE("A jump from epoch 0 to epoch 3 is found again by a resync", "[unit][planner]") {
  Setup s(kN, 0, 0);
  clairfs::FakeClock clock;
  auto planner = s.MakePlanner(6, s.Total() / 4, clock);
  pf::NodeSim sim(*planner, clock, s.sizes, Options(s));
  sim.RunEpoch(Truth(s.sampler, 0));
  CHECK(planner->Stats().deviations == 0);
  CHECK_FALSE(planner->FirstEpochLoss());  // followed: nothing to diagnose
  sim.RunEpoch(Truth(s.sampler, 3));       // the job skipped epochs 1 and 2
  RequireClean(sim.report());
  pf::PlannerStats st = planner->Stats();
  CHECK(st.resyncs == 1);
  CHECK(st.deviations >= 8);  // the threshold
  CHECK(st.deviations <= 24);
  CHECK_FALSE(st.lost);
  for (const pf::RankPosition& p : planner->Positions()) {
    CHECK(p.epoch == 4);
    CHECK(p.offset == 0);
  }
  // Once resynchronised, epoch 3 was served ahead of its reads.
  CHECK(ReadyBetween(sim.report(), kN + 200, 2 * kN) >= 0.99);
  sim.RunEpoch(Truth(s.sampler, 4));
  CHECK(ReadyBetween(sim.report(), 2 * kN, 3 * kN) >= 0.99);
  CHECK(planner->Stats().resyncs == 1);
}

TEST_CASE("A validation pass of unrelated files: lost, then tracking resumes", "[unit][planner]") {
  Setup s(kN, 300, 0);
  clairfs::FakeClock clock;
  auto planner = s.MakePlanner(3, s.Total() / 4, clock);
  pf::NodeSim sim(*planner, clock, s.sizes, Options(s));
  sim.RunEpoch(Truth(s.sampler, 0));
  std::vector<FileId> validation(300);
  std::iota(validation.begin(), validation.end(), static_cast<FileId>(kN));
  sim.OpenSequence(validation);
  pf::PlannerStats st = planner->Stats();
  CHECK(st.deviations == 300);
  CHECK(st.lost);
  CHECK(st.resyncs == 0);
  // Backed off: a few attempts, not one every 8 opens.
  CHECK(st.resync_attempts >= 1);
  CHECK(st.resync_attempts <= 6);
  CHECK(planner->NextFetches(10).fetch.empty());  // lost: the caller caches reactively
  CHECK_FALSE(planner->FirstEpochLoss());         // lost after the first epoch: not the settings
  // The validation files did not push out the prefetched start of epoch 1.
  sim.RunEpoch(Truth(s.sampler, 1));
  RequireClean(sim.report());
  st = planner->Stats();
  CHECK_FALSE(st.lost);
  CHECK(st.deviations == 300);
  CHECK(ReadyBetween(sim.report(), kN + 300, 2 * kN + 300) >= 0.99);
}

TEST_CASE("A restart at epoch 2 of a job predicted from epoch 0", "[unit][planner]") {
  Setup s(kN, 0, 5);
  clairfs::FakeClock clock;
  auto planner = s.MakePlanner(5, s.Total() / 3, clock);
  pf::NodeSim sim(*planner, clock, s.sizes, Options(s));
  sim.RunEpoch(Truth(s.sampler, 2));
  sim.RunEpoch(Truth(s.sampler, 3));
  RequireClean(sim.report());
  pf::PlannerStats st = planner->Stats();
  CHECK(st.resyncs == 1);
  CHECK_FALSE(st.lost);
  CHECK(ReadyBetween(sim.report(), 200, 2 * kN) >= 0.99);
}

TEST_CASE("A restart from the beginning of the current epoch", "[unit][planner]") {
  Setup s(kN, 0, 9);
  clairfs::FakeClock clock;
  auto planner = s.MakePlanner(3, s.Total() / 3, clock);
  pf::NodeSim sim(*planner, clock, s.sizes, Options(s));
  auto epoch0 = Truth(s.sampler, 0);
  // Half of epoch 0, then the job restarts it from the top.
  std::vector<std::vector<FileId>> half = epoch0;
  for (auto& v : half) v.resize(v.size() / 2);
  sim.RunEpoch(half);
  sim.RunEpoch(epoch0);
  RequireClean(sim.report());
  pf::PlannerStats st = planner->Stats();
  CHECK(st.resyncs == 1);
  CHECK_FALSE(st.lost);
  CHECK(ReadyBetween(sim.report(), kN / 2 + 200, kN / 2 + kN) >= 0.99);
}

TEST_CASE("A reader with a different seed: deviations, lost, budget kept, no crash",
          "[unit][planner]") {
  Setup s(kN, 0, 0);
  pf::DistributedSampler other = Setup::Sampler(kN, 1234);
  clairfs::FakeClock clock;
  auto planner = s.MakePlanner(3, s.Total() / 4, clock);
  pf::NodeSim sim(*planner, clock, s.sizes, Options(s));
  for (uint64_t e = 0; e < 3; ++e) sim.RunEpoch(Truth(other, e));
  RequireClean(sim.report());
  pf::PlannerStats st = planner->Stats();
  CHECK(st.opens == 3 * kN);
  CHECK(st.deviations >= st.opens * 9 / 10);
  CHECK(st.resync_attempts >= 1);
  CHECK(st.resyncs == 0);
  CHECK(st.lost);
  CHECK(st.peak_used_bytes <= st.budget_bytes);
}

TEST_CASE("Lost in the first epoch: the first opens are handed out for a diagnosis",
          "[unit][planner]") {
  Setup s(kN, 0, 7);
  const auto other = Truth(Setup::Sampler(kN, 42), 0);
  std::vector<FileId> opened;  // the two ranks' epoch 0 step by step, as they read it
  for (size_t k = 0; k < 100; ++k) {
    for (const auto& rank : other) opened.push_back(rank[k]);
  }
  clairfs::FakeClock clock;
  auto planner = s.MakePlanner(3, s.Total() / 4, clock);
  pf::NodeSim sim(*planner, clock, s.sizes, Options(s));
  const size_t n = pf::Planner::kFirstOpens;
  sim.OpenSequence(std::vector<FileId>(opened.begin(), opened.begin() + 40));
  CHECK(planner->Stats().lost);
  CHECK_FALSE(planner->FirstEpochLoss());  // lost, but fewer opens than a diagnosis needs
  sim.OpenSequence(std::vector<FileId>(opened.begin() + 40, opened.end()));
  auto first = planner->FirstEpochLoss();
  REQUIRE(first);
  CHECK(*first == std::vector<FileId>(opened.begin(), opened.begin() + n));
}

TEST_CASE("Keras >= 3.3: opens anywhere in the read window are tracked", "[unit][planner]") {
  // One consumer; base order = dataset order every epoch; each open is a
  // random one of the next 8 x batch unread files.
  const uint64_t n = 500, batch = 4, window = 8 * batch;
  std::vector<uint64_t> sizes(n, 1000);
  pf::PlannerConfig c;
  c.local_ranks = {0};
  c.end_epoch = 2;
  c.batch_size = batch;
  c.read_window = window;
  c.budget_bytes = 200 * 1000;
  pf::PlannerInput in;
  in.order = [n](const std::vector<uint64_t>&, uint64_t) {
    std::vector<pf::Index> base(n);
    std::iota(base.begin(), base.end(), 0);
    return clairfs::Result<std::vector<std::vector<pf::Index>>>(
        std::vector<std::vector<pf::Index>>{base});
  };
  for (FileId f = 0; f < n; ++f) in.file_of_index.push_back(f);
  in.file_size = pf::ShareSizes(sizes);
  clairfs::FakeClock clock;
  auto planner = std::move(pf::Planner::Create(c, in, clock)).value();
  pf::NodeSimOptions o;
  o.loader.batch_size = batch;
  pf::NodeSim sim(*planner, clock, sizes, o);
  std::mt19937_64 rng(3);
  for (int epoch = 0; epoch < 2; ++epoch) {
    std::vector<FileId> unread(n);
    std::iota(unread.begin(), unread.end(), 0);
    std::vector<FileId> opens;
    while (!unread.empty()) {
      uint64_t k =
          std::uniform_int_distribution<uint64_t>(0, std::min(window, unread.size()) - 1)(rng);
      opens.push_back(unread[k]);
      unread.erase(unread.begin() + static_cast<std::ptrdiff_t>(k));
    }
    sim.OpenSequence(opens);
  }
  RequireClean(sim.report());
  pf::PlannerStats st = planner->Stats();
  CHECK(st.deviations == 0);
  CHECK(st.predicted_opens == 2 * n);
  CHECK(sim.report().ReadyFraction(window) >= 0.99);
}
