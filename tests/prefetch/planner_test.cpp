// Planner unit tests on hand-made orders: Belady decisions, the budget,
// reactive caching, edge cases (oversize files, empty and one-file datasets,
// failed fetches) and concurrent callers.
#include "prefetch/planner/planner.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <thread>

namespace pf = clairfs::prefetch;
using pf::FileId;

namespace {

// One rank reading `order` (dataset index = file id) every epoch.
pf::PlannerInput FixedOrder(std::vector<uint64_t> order, std::vector<uint64_t> sizes) {
  pf::PlannerInput in;
  in.order = [order](const std::vector<uint64_t>& ranks, uint64_t) {
    return clairfs::Result<std::vector<std::vector<pf::Index>>>(
        std::vector<std::vector<pf::Index>>(ranks.size(), order));
  };
  for (FileId f = 0; f < sizes.size(); ++f) in.file_of_index.push_back(f);
  in.file_size = pf::ShareSizes(std::move(sizes));
  return in;
}

pf::PlannerConfig OneRank(uint64_t budget, uint64_t epochs = 1) {
  pf::PlannerConfig c;
  c.local_ranks = {0};
  c.end_epoch = epochs;
  c.budget_bytes = budget;
  c.pin_recent_opens = 0;  // hand-checked decisions: no pinning
  return c;
}

std::unique_ptr<pf::Planner> Make(pf::PlannerConfig c, pf::PlannerInput in,
                                  const clairfs::Clock& clock) {
  auto p = pf::Planner::Create(std::move(c), std::move(in), clock);
  REQUIRE(p.ok());
  return std::move(p).value();
}

// Completes every planned fetch at once; returns the plan.
pf::FetchPlan FetchAll(pf::Planner& p, const std::vector<uint64_t>& sizes) {
  pf::FetchPlan plan = p.NextFetches(100);
  for (FileId f : plan.fetch) REQUIRE(p.OnFetched(f, sizes[f]).empty());
  return plan;
}

using Files = std::vector<FileId>;
enum : FileId { A, B, C, D, E };

}  // namespace

TEST_CASE("Belady: fetch by next use, evict the furthest, keep what is used soon",
          "[unit][planner]") {
  // t:    0  1  2  3  4  5  6  7
  // file: A  B  C  D  A  B  E  A     budget: three 1-byte files
  std::vector<uint64_t> sizes(5, 1);
  clairfs::FakeClock clock;
  auto p = Make(OneRank(3), FixedOrder({A, B, C, D, A, B, E, A}, sizes), clock);

  pf::FetchPlan plan = FetchAll(*p, sizes);
  CHECK(plan.fetch == Files{A, B, C});
  CHECK(plan.evict.empty());
  // D (t3) is due later than everything resident: no eviction yet.
  CHECK(p->NextFetches(100).fetch.empty());

  CHECK(p->OnOpen(A).ready);  // A next at t4
  CHECK(p->OnOpen(B).ready);  // B next at t5
  // D (t3) displaces the furthest resident, B (t5); A (t4) is used soon and stays.
  plan = FetchAll(*p, sizes);
  CHECK(plan.fetch == Files{D});
  CHECK(plan.evict == Files{B});
  // B (t5) cannot displace A (t4), C (t2) or D (t3).
  CHECK(p->NextFetches(100).fetch.empty());
  CHECK(p->Victim() == std::optional<FileId>(A));

  CHECK(p->OnOpen(C).ready);  // C is never used again: first to go
  CHECK(p->Victim() == std::optional<FileId>(C));
  plan = FetchAll(*p, sizes);
  CHECK(plan.fetch == Files{B});
  CHECK(plan.evict == Files{C});

  CHECK(p->OnOpen(D).ready);  // D done: never again
  plan = FetchAll(*p, sizes);
  CHECK(plan.fetch == Files{E});
  CHECK(plan.evict == Files{D});
  CHECK(p->OnOpen(A).ready);
  CHECK(p->OnOpen(B).ready);
  CHECK(p->OnOpen(E).ready);
  CHECK(p->OnOpen(A).ready);

  pf::PlannerStats s = p->Stats();
  CHECK(s.opens == 8);
  CHECK(s.predicted_opens == 8);
  CHECK(s.ready_opens == 8);
  CHECK(s.stalled_opens == 0);
  CHECK(s.deviations == 0);
  CHECK(s.evictions == 3);
  CHECK(s.resident_bytes <= 3);
  CHECK(s.peak_used_bytes == 3);
}

TEST_CASE("A file larger than the budget is skipped and blocks nothing", "[unit][planner]") {
  std::vector<uint64_t> sizes = {5, 100, 5, 5};
  clairfs::FakeClock clock;
  auto p = Make(OneRank(20), FixedOrder({0, 1, 2, 3}, sizes), clock);
  pf::FetchPlan plan = FetchAll(*p, sizes);
  CHECK(plan.fetch == Files{0, 2, 3});
  CHECK(p->Stats().oversize_skips == 1);
  CHECK(p->OnOpen(0).ready);
  pf::OpenResult big = p->OnOpen(1);
  CHECK(big.predicted);
  CHECK_FALSE(big.ready);
  // A demand read of it is not kept either.
  CHECK_FALSE(p->Admit(1, 100).admitted);
  CHECK(p->OnOpen(2).ready);
  CHECK(p->OnOpen(3).ready);
  CHECK(p->Stats().resident_bytes <= 20);
}

TEST_CASE("In-flight bytes count against the budget; a larger file than reserved evicts",
          "[unit][planner]") {
  std::vector<uint64_t> sizes = {4, 4, 4, 4};
  clairfs::FakeClock clock;
  auto p = Make(OneRank(10), FixedOrder({0, 1, 2, 3}, sizes), clock);
  pf::FetchPlan plan = p->NextFetches(100);
  CHECK(plan.fetch == Files{0, 1});  // 8 of 10 bytes reserved, 2 cannot fit
  CHECK(p->Stats().in_flight_bytes == 8);
  CHECK(p->OnFetched(0, 4).empty());
  // File 1 turns out to hold 6 bytes: 4 + 6 = 10 still fits.
  CHECK(p->OnFetched(1, 6).empty());
  // Had it been 7, it is used later than 0, so it goes itself.
  p->OnEvicted(1);
  CHECK(p->Stats().external_evictions == 1);
  CHECK(p->Admit(1, 4).admitted);
  CHECK(p->OnFetched(1, 7) == Files{1});
  pf::PlannerStats s = p->Stats();
  CHECK(s.resident_bytes + s.in_flight_bytes <= 10);
}

TEST_CASE("Failed fetches are retried, then skipped until the file is opened", "[unit][planner]") {
  std::vector<uint64_t> sizes = {1, 1, 1};
  clairfs::FakeClock clock;
  pf::PlannerConfig c = OneRank(10);
  c.max_fetch_retries = 2;
  auto p = Make(c, FixedOrder({0, 1, 2}, sizes), clock);
  CHECK(p->NextFetches(1).fetch == Files{0});
  p->OnFetchFailed(0);
  CHECK(p->NextFetches(1).fetch == Files{0});
  p->OnFetchFailed(0);
  CHECK(p->NextFetches(1).fetch == Files{1});  // 0 gave up
  CHECK(p->Stats().in_flight_bytes == 1);
}

TEST_CASE("Empty dataset and one-file dataset", "[unit][planner]") {
  clairfs::FakeClock clock;
  SECTION("empty, for a practically endless number of epochs") {
    auto p = Make(OneRank(100, uint64_t{1} << 40), FixedOrder({}, {}), clock);
    CHECK(p->NextFetches(10).fetch.empty());
    pf::OpenResult r = p->OnOpen(7);  // not a file of the dataset: harmless
    CHECK_FALSE(r.predicted);
    CHECK(p->Stats().deviations == 1);
    CHECK_FALSE(p->Victim().has_value());
  }
  SECTION("one file, three epochs") {
    std::vector<uint64_t> sizes = {10};
    auto p = Make(OneRank(100, 3), FixedOrder({0}, sizes), clock);
    for (int epoch = 0; epoch < 3; ++epoch) {
      FetchAll(*p, sizes);
      pf::OpenResult r = p->OnOpen(0);
      CHECK(r.predicted);
      CHECK(r.ready);
    }
    pf::PlannerStats s = p->Stats();
    CHECK(s.fetches_planned == 1);  // fetched once, kept for every epoch
    CHECK(s.deviations == 0);
    CHECK(p->OnOpen(0).predicted == false);  // the job's epochs are over
  }
}

TEST_CASE("Planners made from one input share its size table, and a null table is no files",
          "[unit][planner]") {
  clairfs::FakeClock clock;
  std::vector<uint64_t> sizes = {3, 5, 7};
  pf::PlannerInput in = FixedOrder({2, 0, 1}, sizes);
  const std::vector<uint64_t>* table = in.file_size.get();
  std::vector<std::unique_ptr<pf::Planner>> nodes;
  for (int n = 0; n < 4; ++n) nodes.push_back(Make(OneRank(100), in, clock));
  CHECK(in.file_size.get() == table);
  CHECK(in.file_size.use_count() == 5);  // ours and the four planners': no copies
  pf::FetchPlan plan = nodes[3]->NextFetches(10);
  CHECK(plan.fetch == Files{2, 0, 1});
  CHECK(nodes[3]->OnFetched(2, 7).empty());  // its size from the shared table: no overrun
  nodes.clear();
  CHECK(in.file_size.use_count() == 1);

  pf::PlannerConfig c;
  c.enabled = false;
  c.budget_bytes = 10;
  auto empty = Make(c, pf::PlannerInput{}, clock);
  CHECK_FALSE(empty->OnOpen(0).ready);
  CHECK(empty->Admit(0, 4).admitted);
}

TEST_CASE("Disabled planner: reactive caching keeps the budget, oldest out first",
          "[unit][planner]") {
  pf::PlannerConfig c;
  c.enabled = false;
  c.budget_bytes = 10;
  pf::PlannerInput in;
  in.file_size = pf::ShareSizes({4, 4, 4, 20});
  clairfs::FakeClock clock;
  auto p = Make(c, in, clock);
  CHECK(p->NextFetches(10).fetch.empty());
  for (FileId f : {0, 1}) {
    CHECK_FALSE(p->OnOpen(f).ready);
    pf::Admission a = p->Admit(f, 4);
    CHECK(a.admitted);
    CHECK(p->OnFetched(f, 4).empty());
  }
  pf::Admission a = p->Admit(2, 4);
  CHECK(a.admitted);
  CHECK(a.evict == Files{0});
  CHECK(p->OnFetched(2, 4).empty());
  CHECK_FALSE(p->Admit(3, 20).admitted);  // larger than the budget
  CHECK(p->OnOpen(1).ready);
  CHECK(p->Victim() == std::optional<FileId>(1));  // the oldest goes first
  p->OnEvicted(1);
  pf::PlannerStats s = p->Stats();
  CHECK_FALSE(s.enabled);
  CHECK(s.opens == 3);
  CHECK(s.ready_opens == 1);
  CHECK(s.resident_bytes == 4);
}

TEST_CASE("Stall time comes from the clock", "[unit][planner]") {
  std::vector<uint64_t> sizes = {1};
  clairfs::FakeClock clock;
  auto p = Make(OneRank(10), FixedOrder({0}, sizes), clock);
  pf::OpenResult r = p->OnOpen(0);
  CHECK_FALSE(r.ready);
  clock.Advance(std::chrono::milliseconds(3));
  p->EndStall(r);
  p->RecordStall(std::chrono::milliseconds(1));
  pf::PlannerStats s = p->Stats();
  CHECK(s.stalled_opens == 1);
  CHECK(s.stall_ns == 4'000'000);
  CHECK(s.max_stall_ns == 3'000'000);
}

TEST_CASE("Config errors name the field", "[unit][planner]") {
  clairfs::FakeClock clock;
  pf::PlannerInput in = FixedOrder({0}, {1});
  pf::PlannerConfig c = OneRank(10);
  c.local_ranks = {};
  CHECK(pf::Planner::Create(c, in, clock).status().message().find("local ranks") !=
        std::string::npos);
  c = OneRank(10);
  c.end_epoch = 0;
  CHECK_FALSE(pf::Planner::Create(c, in, clock).ok());
  c = OneRank(10);
  c.local_ranks = {0, 0};  // two readers of one shared stream: allowed
  CHECK(pf::Planner::Create(c, in, clock).ok());
  in.file_of_index = {5};
  CHECK_FALSE(pf::Planner::Create(OneRank(10), in, clock).ok());
  pf::PlannerInput failing = FixedOrder({0}, {1});
  failing.order = [](const std::vector<uint64_t>&, uint64_t) {
    return clairfs::Result<std::vector<std::vector<pf::Index>>>(
        clairfs::Status::NotFound("order file: no epoch 0"));
  };
  CHECK(pf::Planner::Create(OneRank(10), failing, clock).status().IsNotFound());
  CHECK(pf::BlockLocalRanks(1, 4, 6) == std::vector<uint64_t>{4, 5});
}

TEST_CASE("Concurrent opens, strays, fetchers and readers keep the budget", "[unit][planner]") {
  // 400 files in the order plus 50 strays no order mentions.
  const uint64_t n = 400, strays = 50;
  std::vector<uint64_t> order(n), sizes(n + strays);
  for (uint64_t i = 0; i < n; ++i) order[i] = (i * 7919) % n;
  for (uint64_t i = 0; i < n + strays; ++i) sizes[i] = 1 + (i * 31) % 50;
  clairfs::FakeClock clock;
  pf::PlannerConfig c = OneRank(2000, 3);
  c.batch_size = 8;
  c.num_workers = 2;
  c.deviation_threshold = 4;
  pf::PlannerInput in = FixedOrder(order, sizes);
  in.file_of_index.resize(n);
  auto p = Make(c, in, clock);
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> over{0};
  auto check = [&] {
    pf::PlannerStats s = p->Stats();
    if (s.resident_bytes + s.in_flight_bytes > s.budget_bytes) ++over;
  };
  std::thread fetcher([&] {
    while (!stop) {
      pf::FetchPlan plan = p->NextFetches(8);
      for (FileId f : plan.fetch) p->OnFetched(f, sizes[f]);
      check();
    }
  });
  std::thread stray([&] {
    for (uint64_t i = 0; i < 64 || !stop; ++i) {  // at least 64, however threads run
      FileId f = static_cast<FileId>(n + i % strays);
      if (!p->OnOpen(f).ready && p->Admit(f, sizes[f]).admitted) p->OnFetched(f, sizes[f]);
      if (i % 16 == 0) {
        if (auto v = p->Victim()) p->OnEvicted(*v);  // the cache drops one by itself
      }
      if (i % 32 == 0) p->OnEvicted(static_cast<FileId>(i % n));
      p->Positions();
      check();
    }
  });
  std::vector<std::thread> openers;
  for (int t = 0; t < 3; ++t) {
    openers.emplace_back([&, t] {
      for (uint64_t e = 0; e < 3; ++e) {
        for (uint64_t i = t; i < n; i += 3) p->OnOpen(static_cast<FileId>(order[i]));
      }
    });
  }
  for (auto& t : openers) t.join();
  stop = true;
  fetcher.join();
  stray.join();
  pf::PlannerStats s = p->Stats();
  CHECK(over == 0);
  CHECK(s.opens >= 3 * n);
  CHECK(s.deviations > 0);
  CHECK(s.resync_attempts > 0);
  CHECK(s.resident_bytes + s.in_flight_bytes <= s.budget_bytes);
}

TEST_CASE("A budget short of twice the loaders' read-ahead is warned of, with what would do",
          "[unit][planner]") {
  // report_e2e's old shape: 2 ranks on one node, batch 8, 2 workers,
  // prefetch_factor 2: (2 x 2 + 1) x 8 = 40 files ahead per rank.
  pf::PlannerConfig c;
  c.local_ranks = {0, 1};
  c.batch_size = 8;
  c.num_workers = 2;
  c.prefetch_factor = 2;
  CHECK(pf::LoadersReadAhead(c) == 80);
  c.budget_bytes = 80 * 3000;  // a third of 240 files of 3,000 bytes
  auto w = pf::ReadAheadWarning(c, 3000);
  REQUIRE(w.has_value());
  CHECK(w->find("holds about 80 files") != std::string::npos);
  CHECK(w->find("read up to 80 ahead") != std::string::npos);
  CHECK(w->find("at least 480000 bytes") != std::string::npos);
  c.budget_bytes = 160 * 3000;  // twice the read-ahead: fine
  CHECK_FALSE(pf::ReadAheadWarning(c, 3000).has_value());
  // Without workers the main process reads one batch, then consumes it.
  c.num_workers = 0;
  c.budget_bytes = 10 * 3000;
  CHECK(pf::LoadersReadAhead(c) == 2 * 2 * 8);
  CHECK(pf::ReadAheadWarning(c, 3000).has_value());
  // A disabled planner or no files: nothing to say.
  CHECK_FALSE(pf::ReadAheadWarning(c, 0).has_value());
  c.enabled = false;
  CHECK_FALSE(pf::ReadAheadWarning(c, 3000).has_value());
}

TEST_CASE("The first deviation is kept as it was seen", "[unit][planner]") {
  // 6 files in order 0..5 over 2 epochs (the second the same order); files
  // 0 and 1 opened, then file 7, in no epoch, then file 4 out of its window.
  std::vector<uint64_t> sizes(8, 1);
  clairfs::FakeClock clock;
  auto p = Make(OneRank(100, 2), FixedOrder({0, 1, 2, 3, 4, 5}, sizes), clock);
  CHECK(p->FirstDeviation().open == 0);
  CHECK(p->OnOpen(0).predicted);
  CHECK(p->OnOpen(1).predicted);
  CHECK(p->FirstDeviation().open == 0);
  CHECK_FALSE(p->OnOpen(7).predicted);
  pf::Deviation d = p->FirstDeviation();
  CHECK(d.open == 3);
  CHECK(d.file == 7);
  CHECK(d.epoch == 0);
  CHECK(d.expected == 2);             // the rank's next entry
  CHECK(d.next_epoch == UINT64_MAX);  // file 7 is in no epoch
  p->OnOpen(5);                       // later deviations leave the first as it was
  CHECK(p->FirstDeviation().open == 3);
  CHECK(p->Stats().first_deviation.file == 7);
}
