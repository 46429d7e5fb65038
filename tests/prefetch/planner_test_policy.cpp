// Planner policy details: files just opened stay, demand reads are admitted
// by next use, a budget below the loader's read-ahead is reported, epochs are
// generated ahead of need, and an order source that ends early ends the
// prediction cleanly.
#include <catch2/catch.hpp>
#include <functional>
#include <numeric>

#include "prefetch/planner/planner.hpp"

namespace pf = clairfs::prefetch;
using pf::FileId;
using Files = std::vector<FileId>;

namespace {

struct Fixture {
  clairfs::FakeClock clock;
  std::vector<uint64_t> sizes;
  std::unique_ptr<pf::Planner> planner;

  // One rank reading `order` every epoch; file id = dataset index.
  Fixture(std::vector<uint64_t> order, std::vector<uint64_t> file_sizes, pf::PlannerConfig c,
          uint64_t last_epoch_with_order = ~uint64_t{0})
      : sizes(std::move(file_sizes)) {
    pf::PlannerInput in;
    in.order = [order, last_epoch_with_order](const std::vector<uint64_t>& ranks, uint64_t epoch) {
      using R = clairfs::Result<std::vector<std::vector<pf::Index>>>;
      if (epoch > last_epoch_with_order) return R(clairfs::Status::NotFound("no such epoch"));
      return R(std::vector<std::vector<pf::Index>>(ranks.size(), order));
    };
    in.file_of_index.resize(sizes.size());
    std::iota(in.file_of_index.begin(), in.file_of_index.end(), 0);
    in.file_size = pf::ShareSizes(sizes);
    auto p = pf::Planner::Create(std::move(c), std::move(in), clock);
    REQUIRE(p.ok());
    planner = std::move(p).value();
  }

  pf::FetchPlan FetchAll() {
    pf::FetchPlan plan = planner->NextFetches(100);
    for (FileId f : plan.fetch) REQUIRE(planner->OnFetched(f, sizes[f]).empty());
    return plan;
  }
};

pf::PlannerConfig OneRank(uint64_t budget, uint64_t epochs = 1) {
  pf::PlannerConfig c;
  c.local_ranks = {0};
  c.end_epoch = epochs;
  c.budget_bytes = budget;
  c.pin_recent_opens = 0;
  return c;
}

// Epoch e's order over 40 files: a stride of 2e + 1.
uint64_t Stride(uint64_t epoch, uint64_t i) { return (i * (2 * epoch + 1)) % 40; }

// A live source over 40 files of 1 byte, as orders reported by the job:
// epochs [0, *known] are known, each `n` entries order_of(epoch, i); a later
// one is Unavailable.
pf::PlannerInput LiveInput(std::shared_ptr<uint64_t> known,
                           std::function<uint64_t(uint64_t, uint64_t)> order_of = Stride,
                           uint64_t n = 40) {
  pf::PlannerInput in;
  in.order = [known, order_of, n](const std::vector<uint64_t>& ranks, uint64_t epoch) {
    using R = clairfs::Result<std::vector<std::vector<pf::Index>>>;
    if (epoch > *known) return R(clairfs::Status::Unavailable("not reported yet"));
    std::vector<pf::Index> order(n);
    for (uint64_t i = 0; i < n; ++i) order[i] = order_of(epoch, i);
    return R(std::vector<std::vector<pf::Index>>(ranks.size(), order));
  };
  in.file_of_index.resize(40);
  std::iota(in.file_of_index.begin(), in.file_of_index.end(), 0);
  in.file_size = pf::ShareSizes(std::vector<uint64_t>(40, 1));
  return in;
}

// Fetches whatever `p` plans until it plans nothing more.
void FetchEverything(pf::Planner& p, const std::vector<uint64_t>& sizes) {
  for (;;) {
    pf::FetchPlan plan = p.NextFetches(100);
    if (plan.fetch.empty()) return;
    for (FileId f : plan.fetch) REQUIRE(p.OnFetched(f, sizes[f]).empty());
  }
}

}  // namespace

TEST_CASE("A file just opened is not evicted under its reader", "[unit][planner]") {
  // Budget for two files; C must displace someone after A and B are opened.
  pf::PlannerConfig c = OneRank(2);
  c.pin_recent_opens = 1;
  Fixture fx({0, 1, 2}, {1, 1, 1}, c);
  CHECK(fx.FetchAll().fetch == Files{0, 1});
  fx.planner->OnOpen(0);  // pinned until the next open
  // 0 is never used again, but is being read: 1 (t1) is not evictable either.
  CHECK(fx.planner->NextFetches(10).fetch.empty());
  fx.planner->OnOpen(1);  // unpins 0, pins 1
  pf::FetchPlan plan = fx.FetchAll();
  CHECK(plan.fetch == Files{2});
  CHECK(plan.evict == Files{0});
}

TEST_CASE("Demand reads are kept only when used before something resident", "[unit][planner]") {
  // t: 0 1 2 3 4 5 ; budget for two files; files 3 and 4 are not in the order.
  Fixture fx({0, 1, 2, 0, 1, 2}, {1, 1, 1, 1, 1}, OneRank(2));
  CHECK(fx.FetchAll().fetch == Files{0, 1});
  // An unpredicted file does not push out predicted ones.
  CHECK_FALSE(fx.planner->Admit(3, 1).admitted);
  fx.planner->OnOpen(0);  // 0 next at t3
  fx.planner->OnOpen(1);  // 1 next at t4
  // 2 (t2) is needed before 1 (t4): admitted in its place.
  pf::Admission a = fx.planner->Admit(2, 1);
  CHECK(a.admitted);
  CHECK(a.evict == Files{1});
  CHECK(fx.planner->OnFetched(2, 1).empty());
  pf::PlannerStats s = fx.planner->Stats();
  CHECK(s.admissions == 1);
  CHECK(s.rejections == 1);
  CHECK(s.resident_bytes == 2);
}

TEST_CASE("A budget smaller than the loader's read-ahead is reported, and still kept",
          "[unit][planner]") {
  std::vector<uint64_t> order(64);
  std::iota(order.begin(), order.end(), 0);
  pf::PlannerConfig c = OneRank(5 * 100, 2);
  c.batch_size = 4;
  c.num_workers = 2;  // the loader alone reads 16 files ahead
  Fixture fx(order, std::vector<uint64_t>(64, 100), c);
  for (FileId f = 0; f < 64; ++f) {
    fx.FetchAll();
    fx.planner->OnOpen(f);
    pf::PlannerStats s = fx.planner->Stats();
    REQUIRE(s.resident_bytes + s.in_flight_bytes <= s.budget_bytes);
  }
  pf::PlannerStats s = fx.planner->Stats();
  CHECK(s.short_budget_stops > 0);
  CHECK(s.ready_opens >= 60);  // in-order reads still find their files
}

TEST_CASE("The next epoch is generated ahead of need; a missing epoch ends prediction",
          "[unit][planner]") {
  std::vector<uint64_t> order(40);
  std::iota(order.begin(), order.end(), 0);
  pf::PlannerConfig c = OneRank(40, 5);
  // The order source knows epochs 0 and 1 only (an order file, say).
  Fixture fx(order, std::vector<uint64_t>(40, 1), c, 1);
  fx.planner->Maintain();
  for (int epoch = 0; epoch < 3; ++epoch) {
    for (FileId i = 0; i < 40; ++i) {
      fx.FetchAll();
      // Epoch 2 reads an order nothing predicted.
      pf::OpenResult r = fx.planner->OnOpen(epoch < 2 ? i : (i * 17) % 40);
      if (epoch < 2) {
        REQUIRE(r.predicted);
        REQUIRE(r.ready);
      }
    }
  }
  pf::PlannerStats s = fx.planner->Stats();
  CHECK(s.order_errors == 1);
  CHECK(s.predicted_opens == 80);
  CHECK(s.deviations == 40);  // epoch 2 was not predicted
  CHECK(s.resyncs == 0);
  CHECK(s.lost);
}

TEST_CASE("An epoch a live source does not know yet is asked for again, not ended",
          "[unit][planner]") {
  // Orders reported by the job arrive as each epoch starts: until then the
  // source answers Unavailable, and the planner keeps asking.
  auto known = std::make_shared<uint64_t>(0);  // epochs [0, *known] are reported
  std::vector<uint64_t> sizes(40, 1);
  clairfs::FakeClock clock;
  auto created = pf::Planner::Create(OneRank(40, 3), LiveInput(known), clock);
  REQUIRE(created.ok());
  pf::Planner& p = **created;
  for (uint64_t epoch = 0; epoch < 3; ++epoch) {
    *known = epoch;
    p.Maintain();  // the daemon does this when a report completes an epoch
    for (uint64_t i = 0; i < 40; ++i) {
      pf::FetchPlan plan = p.NextFetches(100);
      for (FileId f : plan.fetch) REQUIRE(p.OnFetched(f, sizes[f]).empty());
      pf::OpenResult r = p.OnOpen(static_cast<FileId>((i * (2 * epoch + 1)) % 40));
      REQUIRE(r.predicted);
      REQUIRE(r.ready);
    }
  }
  pf::PlannerStats s = p.Stats();
  CHECK(s.order_errors == 0);
  CHECK(s.predicted_opens == 120);
  CHECK(s.deviations == 0);
  CHECK_FALSE(s.lost);
}

TEST_CASE("Opens that come before their epoch's reported order are matched once it arrives",
          "[unit][planner]") {
  // The report of an epoch and its first opens reach the daemon on two
  // threads: on a busy host a whole epoch's opens can come first.
  auto known = std::make_shared<uint64_t>(0);
  std::vector<uint64_t> sizes(40, 1);
  auto order_of = Stride;
  clairfs::FakeClock clock;
  auto created = pf::Planner::Create(OneRank(40, 4), LiveInput(known), clock);
  REQUIRE(created.ok());
  pf::Planner& p = **created;
  auto open_epoch = [&](uint64_t epoch, uint64_t from, uint64_t to) {
    for (uint64_t i = from; i < to; ++i) {
      for (FileId f : p.NextFetches(100).fetch) REQUIRE(p.OnFetched(f, sizes[f]).empty());
      p.OnOpen(static_cast<FileId>(order_of(epoch, i)));
    }
  };
  p.Maintain();
  open_epoch(0, 0, 40);
  // Epoch 1: all its opens first, then its report.
  open_epoch(1, 0, 40);
  CHECK(p.Stats().unreported_opens == 40);
  *known = 1;
  p.Maintain();
  pf::PlannerStats s = p.Stats();
  CHECK(s.unreported_opens == 0);
  CHECK(s.late_opens == 40);
  CHECK(s.predicted_opens == 80);
  // Epoch 2: 10 opens before the report, the rest after; the planner is
  // where the job is, so they are all found.
  open_epoch(2, 0, 10);
  *known = 2;
  open_epoch(2, 10, 40);  // the first of these asks again and finds epoch 2
  // Epoch 3: a file of no entry among the early opens stays unreported.
  p.OnOpen(static_cast<FileId>(order_of(3, 0)));
  p.OnOpen(static_cast<FileId>(order_of(3, 1)));
  *known = 3;
  p.Maintain();
  s = p.Stats();
  CHECK(s.late_opens == 52);
  CHECK(s.unreported_opens == 0);
  CHECK(s.predicted_opens == 120 + 2);
  CHECK(s.deviations == 0);
  REQUIRE(s.per_epoch.size() == 4);
  CHECK(s.per_epoch[1].opens == 40);
  CHECK(s.per_epoch[2].opens == 40);
  CHECK(s.per_epoch[3].opens == 2);
  CHECK_FALSE(s.lost);
}

TEST_CASE("A held open that is in no reported epoch stays unreported", "[unit][planner]") {
  auto known = std::make_shared<uint64_t>(0);
  // Every epoch is files 0-19 only.
  pf::PlannerInput in = LiveInput(
      known, [](uint64_t, uint64_t i) { return i; }, 20);
  clairfs::FakeClock clock;
  auto created = pf::Planner::Create(OneRank(40, 4), std::move(in), clock);
  REQUIRE(created.ok());
  pf::Planner& p = **created;
  p.Maintain();
  for (FileId f = 0; f < 20; ++f) p.OnOpen(f);
  p.OnOpen(30);  // before epoch 1's report; no epoch holds file 30
  p.OnOpen(0);
  for (uint64_t epoch = 1; epoch <= 3; ++epoch) {
    *known = epoch;
    p.Maintain();
  }
  pf::PlannerStats s = p.Stats();
  CHECK(s.unreported_opens == 1);
  CHECK(s.late_opens == 1);
  CHECK(s.deviations == 0);
}

TEST_CASE("Held opens that were reads before the epoch neither count as its opens nor skip it",
          "[unit][planner]") {
  // Keras 3 reads a new iterator's first two batches to learn their shape
  // before the epoch is reported, then reads the same files again in the
  // epoch. Held, the early reads are matched where their files happen to lie
  // inside the window (positions 10 and 12 of 40 here, the window 13 steps):
  // they must not carry the window past the epoch's first entries (which
  // would be abandoned, and their opens taken for the next epoch's), and
  // the epoch's own opens of those files are its opens, not deviations.
  auto known = std::make_shared<uint64_t>(0);
  std::vector<uint64_t> sizes(40, 1);
  clairfs::FakeClock clock;
  pf::PlannerConfig c = OneRank(20, 3);  // epoch 1's files not resident when read early
  c.batch_size = 4;
  auto created = pf::Planner::Create(c, LiveInput(known), clock);
  REQUIRE(created.ok());
  pf::Planner& p = **created;
  auto open = [&](uint64_t epoch, uint64_t i) {
    for (FileId f : p.NextFetches(100).fetch) REQUIRE(p.OnFetched(f, sizes[f]).empty());
    return p.OnOpen(static_cast<FileId>(Stride(epoch, i)));
  };
  p.Maintain();
  for (uint64_t i = 0; i < 40; ++i) open(0, i);
  for (uint64_t i : {10, 12, 22}) open(1, i);  // the early reads, before epoch 1's report
  *known = 1;
  p.Maintain();
  CHECK(p.Stats().late_opens == 2);  // 10 and 12, taken for the epoch's until shown otherwise
  for (uint64_t i = 0; i < 40; ++i) {
    pf::OpenResult r = open(1, i);
    CHECK(r.predicted);
    // The entries the early reads took were not fetched for the epoch.
    CHECK(r.ready == (i != 10 && i != 12));
  }
  *known = 2;
  p.Maintain();
  pf::PlannerStats s = p.Stats();
  CHECK(s.deviations == 0);
  CHECK(s.repeat_opens == 0);
  CHECK(s.late_opens == 0);
  CHECK(s.unreported_opens == 3);
  CHECK(s.predicted_opens == 80);
  REQUIRE(s.per_epoch.size() >= 2);
  CHECK(s.per_epoch[1].opens == 40);
  CHECK(s.per_epoch[1].ready == 38);  // the epoch's own opens, not the early ones
  CHECK(s.per_epoch[1].stalls == 2);
  CHECK(s.per_epoch[1].deviations == 0);
}

TEST_CASE("A guess at the epoch not reported yet is fetched into room nothing known needs",
          "[unit][planner]") {
  // 40 files, a budget of 10. Epoch 1 is reported late; the guess at it is
  // right or wrong.
  for (const bool right : {true, false}) {
    INFO("guess right: " << right);
    auto known = std::make_shared<uint64_t>(0);
    std::vector<uint64_t> sizes(40, 1);
    auto order_of = Stride;
    pf::PlannerInput in = LiveInput(known);
    in.guess = [right, order_of](const std::vector<uint64_t>& ranks, uint64_t epoch) {
      std::vector<pf::Index> order(40);
      for (uint64_t i = 0; i < 40; ++i) order[i] = order_of(right ? epoch : epoch + 5, i);
      return clairfs::Result<std::vector<std::vector<pf::Index>>>(
          std::vector<std::vector<pf::Index>>(ranks.size(), order));
    };
    clairfs::FakeClock clock;
    auto created = pf::Planner::Create(OneRank(10, 3), std::move(in), clock);
    REQUIRE(created.ok());
    pf::Planner& p = **created;
    auto fetch_all = [&] { FetchEverything(p, sizes); };
    p.Maintain();
    uint64_t ready = 0;
    for (uint64_t i = 0; i < 40; ++i) {
      fetch_all();
      pf::OpenResult r = p.OnOpen(static_cast<FileId>(order_of(0, i)));
      REQUIRE(r.predicted);
      ready += r.ready;
    }
    CHECK(ready == 40);
    // Epoch 0 read, epoch 1 not reported: the guess fills the budget.
    fetch_all();
    pf::PlannerStats s = p.Stats();
    CHECK(s.guessed_fetches > 0);  // some may be resident from epoch 0 already
    CHECK(s.resident_bytes == 10);
    const uint64_t guessed = s.guessed_fetches;
    *known = 1;
    p.Maintain();
    ready = 0;
    bool first_ready = false;
    for (uint64_t i = 0; i < 40; ++i) {
      if (i > 0) fetch_all();  // the first open comes before any fetch
      pf::OpenResult r = p.OnOpen(static_cast<FileId>(order_of(1, i)));
      REQUIRE(r.predicted);
      if (i == 0) first_ready = r.ready;
      ready += r.ready;
    }
    s = p.Stats();
    CHECK(s.deviations == 0);
    CHECK(s.resync_attempts == 0);
    CHECK(s.peak_used_bytes <= 10);
    if (right) {
      // Every file fetched on it was used (the guess at epoch 2, taken as
      // soon as epoch 1 came, does not hide them).
      CHECK(s.guessed_used >= guessed);
      CHECK(ready == 40);
    } else {
      // The wrong guess's files are the first to go: after the first open
      // (which may find its file by chance) every one is ready.
      CHECK(ready - (first_ready ? 1 : 0) == 39);
    }
  }
}

TEST_CASE("A rank's files are fetched as soon as it reports, not when the node's last rank does",
          "[unit][planner]") {
  // Two local ranks over 40 files of 1 byte, a budget of 10; rank g reads
  // Stride(epoch, 2i + g), i < 20. Each rank reports its epoch on its own;
  // rank 0 starts epoch 1 while rank 1 has not reported it yet.
  std::vector<uint64_t> known = {0, 0};
  auto order_of = [](uint64_t rank, uint64_t epoch) {
    std::vector<pf::Index> order(20);
    for (uint64_t i = 0; i < 20; ++i) order[i] = Stride(epoch, 2 * i + rank);
    return order;
  };
  pf::PlannerInput in;
  in.order = [&known, order_of](const std::vector<uint64_t>& ranks, uint64_t epoch) {
    using R = clairfs::Result<std::vector<std::vector<pf::Index>>>;
    std::vector<std::vector<pf::Index>> out;
    for (uint64_t r : ranks) {
      if (epoch > known[r]) return R(clairfs::Status::Unavailable("not reported yet"));
      out.push_back(order_of(r, epoch));
    }
    return R(std::move(out));
  };
  in.file_of_index.resize(40);
  std::iota(in.file_of_index.begin(), in.file_of_index.end(), 0);
  in.file_size = pf::ShareSizes(std::vector<uint64_t>(40, 1));
  pf::PlannerConfig c = OneRank(10, 2);
  c.local_ranks = {0, 1};
  clairfs::FakeClock clock;
  auto created = pf::Planner::Create(c, std::move(in), clock);
  REQUIRE(created.ok());
  pf::Planner& p = **created;
  auto fetch_all = [&] { FetchEverything(p, std::vector<uint64_t>(40, 1)); };
  auto open = [&](uint64_t rank, uint64_t epoch, uint64_t i) {
    fetch_all();
    return p.OnOpen(static_cast<FileId>(order_of(rank, epoch)[i]));
  };
  p.Maintain();
  for (uint64_t i = 0; i < 20; ++i) {
    for (uint64_t r : {0, 1}) REQUIRE(open(r, 0, i).ready);
  }
  known[0] = 1;
  p.Maintain();
  // Rank 0's first 6 opens come before rank 1 reports: its files are there.
  for (uint64_t i = 0; i < 6; ++i) CHECK(open(0, 1, i).ready);
  CHECK(p.Stats().guessed_fetches >= 6);
  known[1] = 1;
  p.Maintain();
  for (uint64_t i = 0; i < 20; ++i) {
    if (i >= 6) CHECK(open(0, 1, i).ready);
    CHECK(open(1, 1, i).ready);
  }
  pf::PlannerStats s = p.Stats();
  CHECK(s.late_opens == 6);
  CHECK(s.deviations == 0);
  REQUIRE(s.per_epoch.size() == 2);
  CHECK(s.per_epoch[1].opens == 40);
  CHECK(s.per_epoch[1].stalls == 0);
  CHECK(s.peak_used_bytes <= 10);
}

TEST_CASE("A file opened twice in a row is a repeat, not a deviation", "[unit][planner]") {
  std::vector<uint64_t> order(100);
  std::iota(order.begin(), order.end(), 0);
  pf::PlannerConfig c = OneRank(100, 2);
  c.pin_recent_opens = pf::kAuto;
  Fixture fx(order, std::vector<uint64_t>(100, 1), c);
  for (int epoch = 0; epoch < 2; ++epoch) {
    for (FileId f = 0; f < 100; ++f) {
      fx.FetchAll();
      CHECK(fx.planner->OnOpen(f).predicted);
      CHECK(fx.planner->OnOpen(f).ready);  // e.g. a header check, then the decode
    }
  }
  pf::PlannerStats s = fx.planner->Stats();
  CHECK(s.repeat_opens == 200);
  CHECK(s.deviations == 0);
  CHECK(s.resync_attempts == 0);
  CHECK(s.predicted_opens == 200);
}
