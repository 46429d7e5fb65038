// Staging in the job's first-use order: the ranges planned (FirstUseUnits),
// the copies made in that order with reads under way, and plans that come
// in pieces and after staging began (the job's reported orders).
#include <stdlib.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <thread>
#include <tuple>

#include "base/clock.hpp"
#include "fs/dist/distributed_pack_store.hpp"
#include "fs/dist/ownership.hpp"
#include "fs/dist/stager.hpp"
#include "fs/store/payload_source.hpp"
#include "fs/store/range_set.hpp"
#include "fs/store/source_reads.hpp"
#include "partitioner/format/pack_file.hpp"
#include "partitioner/pack/packer.hpp"

namespace stdfs = std::filesystem;
using namespace clairfs;
using namespace clairfs::fs;
using namespace std::chrono_literals;

namespace {
std::string Slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}
}  // namespace

namespace {
// A pack of files of the sizes given, named f000, f001, ... in `partitions`
// partitions of consecutive files.
struct SizedDataset {
  explicit SizedDataset(const std::vector<uint64_t>& sizes, uint32_t partitions = 2) {
    std::string t = (stdfs::temp_directory_path() / "clairfs-units-test.XXXXXX").string();
    root = ::mkdtemp(t.data());
    std::mt19937 rng(11);
    stdfs::create_directories(root + "/src");
    for (size_t i = 0; i < sizes.size(); ++i) {
      std::string data(sizes[i], '\0');
      for (auto& ch : data) ch = static_cast<char>(rng());
      char name[16];
      std::snprintf(name, sizeof name, "f%03u", static_cast<unsigned>(i));
      std::ofstream(root + "/src/" + name, std::ios::binary) << data;
      files.emplace_back(name, data);
    }
    pack::PackOptions o;
    o.src = root + "/src";
    o.out = root + "/out";
    o.partitions = partitions;
    o.placement = "contiguous";
    o.zstd_level = 0;
    REQUIRE(pack::Pack(o).ok());
    manifest = *format::Manifest::Load(o.out);
  }
  ~SizedDataset() { stdfs::remove_all(root); }
  std::string out() const { return root + "/out"; }
  std::string root;
  std::vector<std::pair<std::string, std::string>> files;
  std::shared_ptr<const format::Manifest> manifest;
};
}  // namespace

TEST_CASE("the job's first-use order over a rank's packs: ranges, pieces and runs of small files",
          "[dist]") {
  // Small, just-under and just-over the read size, and large files, mixed.
  const std::vector<uint64_t> sizes = {5000,
                                       70000,
                                       kFirstUseMinRead - 1,
                                       kFirstUseMinRead,
                                       9000000,
                                       3000,
                                       90000,
                                       1200000,
                                       40000,
                                       100000,
                                       700000,
                                       2000,
                                       150000,
                                       8000,
                                       60000,
                                       300000,
                                       20000};
  SizedDataset d(sizes);
  const format::Manifest& m = *d.manifest;
  std::mt19937 rng(GENERATE(1u, 2u, 3u));
  const uint64_t chunk = GENERATE(uint64_t{256} << 10, uint64_t{4} << 20);
  // A random first step per file (ties on purpose), some files never read.
  std::vector<uint64_t> step(m.node_count(), UINT64_MAX);
  for (uint32_t n = 0; n < m.node_count(); ++n) {
    if (!m.IsDirectory(n) && rng() % 5 != 0) step[n] = rng() % 8;
  }
  const std::vector<uint32_t> mine =
      GENERATE(std::vector<uint32_t>{0, 1}, std::vector<uint32_t>{1});
  const std::vector<StageUnit> units = FirstUseUnits(m, mine, step, chunk);
  INFO("chunk " << chunk << ", partitions " << mine.size());

  std::vector<RangeSet> covered(m.partition_count() + 1);
  for (size_t i = 0; i < units.size(); ++i) {
    const StageUnit& u = units[i];
    REQUIRE(std::find(mine.begin(), mine.end(), u.partition) != mine.end());
    CHECK(u.size > 0);
    CHECK(u.size <= chunk);
    CHECK(u.offset + u.size <= m.partition(u.partition).pack_bytes);
    // In the job's order, a tie in pack order; no byte twice.
    if (i > 0) {
      const StageUnit& v = units[i - 1];
      CHECK(std::tie(v.step, v.partition, v.offset) < std::tie(u.step, u.partition, u.offset));
    }
    CHECK(covered[u.partition].Add(u.offset, u.offset + u.size) == 0);
    // Its step is the earliest of the files it holds bytes of.
    uint64_t earliest = UINT64_MAX;
    for (uint32_t n = 0; n < m.node_count(); ++n) {
      const format::NodeRecord& r = m.node(n);
      if (m.IsDirectory(n) || r.partition != u.partition) continue;
      if (r.offset < u.offset + u.size && u.offset < r.offset + r.stored_size) {
        earliest = std::min(earliest, step[n]);
      }
    }
    CHECK(u.step == earliest);
  }
  const auto overlaps = [&](uint32_t p, uint64_t lo, uint64_t hi) {
    const auto gaps = covered[p].Gaps(lo, hi);
    return !(gaps.size() == 1 && gaps[0] == std::pair<uint64_t, uint64_t>{lo, hi});
  };
  for (uint32_t n = 0; n < m.node_count(); ++n) {
    const format::NodeRecord& r = m.node(n);
    if (m.IsDirectory(n)) continue;
    const bool in_mine = std::find(mine.begin(), mine.end(), r.partition) != mine.end();
    INFO("file " << m.Path(n) << " of " << r.stored_size << " bytes, step " << step[n]);
    if (!in_mine) {
      CHECK_FALSE(overlaps(r.partition, r.offset, r.offset + r.stored_size));
    } else if (step[n] != UINT64_MAX) {
      // Every byte the job reads is in a range.
      CHECK(covered[r.partition].Covers(r.offset, r.offset + r.stored_size));
    } else if (r.stored_size >= std::min(kFirstUseMinRead, chunk)) {
      // A large file nobody reads is left to its pack's turn.
      CHECK_FALSE(overlaps(r.partition, r.offset, r.offset + r.stored_size));
    }
  }
  // Nothing known: nothing ahead.
  CHECK(FirstUseUnits(m, mine, std::vector<uint64_t>(m.node_count(), UINT64_MAX), chunk).empty());
  CHECK(FirstUseUnits(m, mine, {}, chunk).empty());
}

TEST_CASE(
    "staging in the job's first-use order: every byte once, each pack verified, with reads "
    "under way",
    "[dist]") {
  std::vector<uint64_t> sizes;
  std::mt19937 rng(5);
  for (int i = 0; i < 40; ++i)
    sizes.push_back(i % 7 == 0 ? 600000 + rng() % 900000 : rng() % 90000);
  SizedDataset d(sizes);
  const format::Manifest& m = *d.manifest;
  const Ownership own(m.partition_count(), 1, 1);
  const std::vector<uint32_t> mine = own.PartitionsOf(0);
  std::vector<uint64_t> step(m.node_count(), UINT64_MAX);
  for (uint32_t n = 0; n < m.node_count(); ++n) {
    if (!m.IsDirectory(n) && rng() % 4 != 0) step[n] = rng() % 40;
  }
  const unsigned threads = GENERATE(1u, 2u);
  const bool reader = GENERATE(false, true);
  INFO(threads << " thread(s), " << (reader ? "a reader" : "no reader"));
  SourceReads counted(m.partition_count() + 1);
  const std::string ssd = d.root + "/ssd";
  stdfs::remove_all(ssd);
  Stager s(d.out(), ssd, d.manifest, mine, threads, std::chrono::hours(1));
  s.CountReads(&counted);
  s.FirstUse(FileSteps(step));
  const std::vector<StageUnit> units = FirstUseUnits(m, mine, step, 4u << 20);
  REQUIRE_FALSE(units.empty());
  CHECK(s.progress().first_use_units == units.size());
  DistributedPackStore store(d.out(), d.manifest, own, 0, nullptr, &s, DistOptions{}, &counted);
  PackPayloadSource source(d.manifest, &store);
  int bad = 0;
  s.Start();
  if (reader) {
    // The job reads every file while staging runs, in an order of its own.
    std::vector<size_t> order(d.files.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), rng);
    for (size_t i : order) {
      const auto& [rel, data] = d.files[i];
      std::string got(data.size(), '\0');
      auto n = source.Read(*m.Resolve(rel), 0, got.size(), got.data());
      if (!n.ok() || got != data) ++bad;
    }
  }
  s.Wait();
  CHECK(bad == 0);
  REQUIRE(s.progress().packs_failed == 0);
  CHECK(s.progress().packs_done == mine.size());
  uint64_t share = 0, ahead = 0;
  for (uint32_t p : mine) share += m.partition(p).pack_bytes;
  for (const StageUnit& u : units) ahead += u.size;
  const SourceTotals t = counted.totals();
  CHECK(t.reread == 0);  // each byte read from the dataset directory once
  CHECK(t.distinct == share);
  // The ranges came ahead, by staging or by the reads that got there first.
  CHECK(s.progress().bytes_first_use <= ahead);
  CHECK(s.progress().bytes_first_use + s.progress().bytes_kept >= ahead);
  if (!reader) CHECK(s.progress().bytes_first_use == ahead);
  CHECK(s.progress().bytes_copied == share);
  for (uint32_t p : mine) {
    const std::string name = m.PackName(p);
    CHECK(Slurp(ssd + "/" + name) == Slurp(d.out() + "/" + name));
    CHECK_FALSE(stdfs::exists(ssd + "/." + name + ".staging"));
  }
  // Staged: every file right from the local copies, nothing more from the dataset.
  for (const auto& [rel, data] : d.files) {
    std::string got(data.size(), '\0');
    auto n = source.Read(*m.Resolve(rel), 0, got.size(), got.data());
    CHECK((n.ok() && got == data));
  }
  CHECK(counted.totals().distinct == share);
  CHECK(counted.totals().reread == 0);
}

namespace {
// A dataset of files of `sizes` in `partitions` packs, all of them one
// rank's, and what staging them takes.
struct OneRank {
  OneRank(const std::vector<uint64_t>& sizes, uint32_t partitions)
      : d(sizes, partitions),
        m(*d.manifest),
        mine(Ownership(m.partition_count(), 1, 1).PartitionsOf(0)),
        counted(m.partition_count() + 1),
        ssd(d.root + "/ssd") {}

  // Every pack as the dataset has it, after staging, its bytes read from
  // the dataset directory once (`uncounted` of them by reads that did not
  // count).
  void CheckStaged(uint64_t uncounted = 0) const {
    uint64_t share = 0;
    for (uint32_t p : mine) {
      share += m.partition(p).pack_bytes;
      const std::string name = m.PackName(p);
      CHECK(Slurp(ssd + "/" + name) == Slurp(d.out() + "/" + name));
      CHECK_FALSE(stdfs::exists(ssd + "/." + name + ".staging"));
    }
    CHECK(counted.totals().distinct + uncounted == share);
    CHECK(counted.totals().reread == 0);
  }
  // The order one copying thread begins the packs in: `first`, then each
  // pack once its last range of `units` is in, then those without one.
  std::vector<uint32_t> InTurn(const std::vector<StageUnit>& units,
                               std::vector<uint32_t> first = {}) const {
    const size_t fixed = first.size();
    for (size_t i = units.size(); i-- > 0;) {
      if (std::find(first.begin(), first.end(), units[i].partition) == first.end()) {
        first.insert(first.begin() + static_cast<std::ptrdiff_t>(fixed), units[i].partition);
      }
    }
    for (uint32_t p : mine) {
      if (std::find(first.begin(), first.end(), p) == first.end()) first.push_back(p);
    }
    return first;
  }

  SizedDataset d;
  const format::Manifest& m;
  const std::vector<uint32_t> mine;
  SourceReads counted;
  const std::string ssd;
};

uint64_t Bytes(const std::vector<StageUnit>& units) {
  uint64_t bytes = 0;
  for (const StageUnit& u : units) bytes += u.size;
  return bytes;
}

std::vector<uint64_t> Earlier(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b) {
  std::vector<uint64_t> out(a.size());
  for (size_t i = 0; i < a.size(); ++i) out[i] = std::min(a[i], b[i]);
  return out;
}

// Sizes of `n` files: every `every`-th one of `large` bytes (a range of its
// own), the others small.
std::vector<uint64_t> Sizes(int n, int every, uint64_t large, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint64_t> sizes;
  for (int i = 0; i < n; ++i) sizes.push_back(i % every == 0 ? large : 10000 + rng() % 200000);
  return sizes;
}
}  // namespace

TEST_CASE("first-use plans in pieces: the earlier step per file, held ranges not planned again",
          "[dist]") {
  OneRank o(Sizes(48, 4, 1200000, 9), 4);
  const format::Manifest& m = o.m;
  std::mt19937 rng(9);
  Stager s(o.d.out(), o.ssd, o.d.manifest, o.mine, 1, std::chrono::hours(1));
  s.CountReads(&o.counted);
  // One node's ranks' reads, then another's: some files in both, each half
  // of the files in one, some in none.
  std::vector<uint64_t> a(m.node_count(), UINT64_MAX), b = a;
  for (uint32_t n = 0; n < m.node_count(); ++n) {
    if (m.IsDirectory(n)) continue;
    const uint32_t r = rng() % 6;
    if (r < 3) a[n] = rng() % 30;
    if (r >= 2 && r < 5) b[n] = rng() % 30;
  }
  s.FirstUse(FileSteps(a));
  CHECK(s.progress().first_use_units == FirstUseUnits(m, o.mine, a, 4u << 20).size());
  s.FirstUse(FileSteps(b));
  const std::vector<uint64_t> both = Earlier(a, b);
  const std::vector<StageUnit> planned = FirstUseUnits(m, o.mine, both, 4u << 20);
  CHECK(s.progress().first_use_units == planned.size());
  // Nothing new: the same plan.
  s.FirstUse(FileSteps(a));
  s.FirstUse({{m.node_count() + 5, 0}, {0, UINT64_MAX}});  // no such file; not read
  CHECK(s.progress().first_use_units == planned.size());

  // The job reads a large file before staging starts: its range is in the
  // copy, so a plan that moves it earlier does not copy it again.
  uint32_t large = 0;
  while (large < m.node_count() &&
         (m.IsDirectory(large) || m.node(large).stored_size < kFirstUseMinRead)) {
    ++large;
  }
  REQUIRE(large < m.node_count());
  const format::NodeRecord& r = m.node(large);
  auto pack = format::OpenPack(o.d.out(), m, r.partition);
  REQUIRE(pack.ok());
  std::string got(r.stored_size, '\0');
  REQUIRE(s.Reading(r.partition, pack->get())->ReadExact(r.offset, got.size(), got.data()).ok());
  std::vector<uint64_t> c(m.node_count(), UINT64_MAX);
  c[large] = 0;
  s.FirstUse(FileSteps(c));
  const std::vector<StageUnit> now = FirstUseUnits(m, o.mine, Earlier(both, c), 4u << 20);
  const auto held = std::count_if(now.begin(), now.end(), [&](const StageUnit& u) {
    return u.partition == r.partition && u.offset == r.offset && u.size == r.stored_size;
  });
  CHECK(held == 1);
  CHECK(s.progress().first_use_units == now.size() - 1);

  s.Start();
  s.Wait();
  REQUIRE(s.progress().packs_failed == 0);
  CHECK(s.progress().packs_done == o.mine.size());
  CHECK(s.progress().bytes_first_use == Bytes(now) - r.stored_size);
  CHECK(s.progress().bytes_kept == r.stored_size);
  o.CheckStaged(r.stored_size);
}

TEST_CASE("a first-use plan after staging began orders the packs not begun", "[dist]") {
  // The first pack's copy is held at its first chunk (staging yields to a
  // read of the job at a clock that does not move) while the plan comes.
  OneRank o(Sizes(40, 5, 1500000, 4), 4);
  const format::Manifest& m = o.m;
  std::mt19937 rng(4);
  REQUIRE(o.mine.size() >= 4);
  FakeClock clock;
  clock.Advance(1s);
  Stager s(o.d.out(), o.ssd, o.d.manifest, o.mine, 1, std::chrono::hours(1), &clock);
  s.CountReads(&o.counted);
  s.YieldToReads(1ms);
  auto pack = format::OpenPack(o.d.out(), m, o.mine[0]);
  REQUIRE(pack.ok());
  std::string got(100, '\0');
  REQUIRE(s.Reading(o.mine[0], pack->get())->ReadExact(0, got.size(), got.data()).ok());
  s.Start();
  for (int i = 0; i < 5000 && s.begun().empty(); ++i) std::this_thread::sleep_for(1ms);
  REQUIRE(s.begun() == std::vector<uint32_t>{o.mine[0]});
  // The job reads the last pack first, then the others backwards, some of
  // each pack's files not at all.
  std::vector<uint64_t> step(m.node_count(), UINT64_MAX);
  for (uint32_t n = 0; n < m.node_count(); ++n) {
    if (m.IsDirectory(n) || rng() % 4 == 0) continue;
    step[n] = (10 - m.node(n).partition) * 100 + rng() % 100;
  }
  // The job's reads made one of them next already: the plan orders it too.
  s.Prefer(o.mine[2]);
  s.FirstUse(FileSteps(step));
  const std::vector<uint32_t> rest(o.mine.begin() + 1, o.mine.end());
  const std::vector<StageUnit> units = FirstUseUnits(m, rest, step, 4u << 20);
  CHECK(s.progress().first_use_units == units.size());
  clock.Advance(1h);
  s.Wait();
  REQUIRE(s.progress().packs_failed == 0);
  // Each pack finished once its last range is in: in the job's order (the
  // last pack first), then those the job does not read.
  const std::vector<uint32_t> expected = o.InTurn(units, {o.mine[0]});
  CHECK(expected.size() >= 4);
  CHECK(std::is_sorted(expected.begin() + 1, expected.begin() + 4, std::greater<>()));
  CHECK(s.begun() == expected);
  CHECK(s.progress().bytes_first_use == Bytes(units));
  o.CheckStaged(got.size());
}

TEST_CASE("a plan learned for later is made by the copying thread before its first copy",
          "[dist]") {
  OneRank o(Sizes(30, 3, 1100000, 12), 3);
  const format::Manifest& m = o.m;
  std::mt19937 rng(12);
  Stager s(o.d.out(), o.ssd, o.d.manifest, o.mine, 1, std::chrono::hours(1));
  s.CountReads(&o.counted);
  // The job reads the packs backwards.
  std::vector<uint64_t> step(m.node_count(), UINT64_MAX);
  uint64_t read = 0;
  for (uint32_t n = 0; n < m.node_count(); ++n) {
    if (m.IsDirectory(n)) continue;
    step[n] = (10 - m.node(n).partition) * 100 + rng() % 100;
    ++read;
  }
  s.FirstUseLater(FileSteps(step));
  CHECK(s.progress().first_use_files == read);
  CHECK(s.progress().first_use_units == 0);  // not planned yet
  s.Start();
  s.Wait();
  REQUIRE(s.progress().packs_failed == 0);
  const std::vector<StageUnit> units = FirstUseUnits(m, o.mine, step, 4u << 20);
  CHECK(s.progress().first_use_units == units.size());
  CHECK(s.progress().bytes_first_use == Bytes(units));
  const std::vector<uint32_t> expected = o.InTurn(units);
  CHECK(expected.size() >= 3);
  CHECK(std::is_sorted(expected.begin(), expected.begin() + 3, std::greater<>()));
  CHECK(s.begun() == expected);
  o.CheckStaged();
}

TEST_CASE("first-use plans while staging runs and the job reads: every byte once", "[dist]") {
  OneRank o(Sizes(60, 6, 2500000, 6), 6);
  const format::Manifest& m = o.m;
  std::mt19937 rng(6);
  const unsigned threads = GENERATE(1u, 2u);
  INFO(threads << " thread(s)");
  stdfs::remove_all(o.ssd);
  Stager s(o.d.out(), o.ssd, o.d.manifest, o.mine, threads, std::chrono::hours(1));
  s.CountReads(&o.counted);
  const Ownership own(m.partition_count(), 1, 1);
  DistributedPackStore store(o.d.out(), o.d.manifest, own, 0, nullptr, &s, DistOptions{},
                             &o.counted);
  PackPayloadSource source(o.d.manifest, &store);
  std::vector<size_t> order(o.d.files.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), rng);
  s.Start();
  // Plans for a few files at a time, from another thread (as reports come).
  std::thread planner([&] {
    std::mt19937 prng(8);
    for (size_t i = 0; i < order.size(); i += 7) {
      std::vector<FileStep> files;
      for (size_t j = i; j < std::min(order.size(), i + 7); ++j) {
        files.push_back({*m.Resolve(o.d.files[order[j]].first), j + prng() % 5});
      }
      // As the job's reports (planned at once) and peers' notices (planned
      // by a copying thread) bring them.
      if (i % 2 == 0) {
        s.FirstUse(files);
      } else {
        s.FirstUseLater(files);
      }
      std::this_thread::sleep_for(1ms);
    }
  });
  int bad = 0;
  for (size_t i : order) {
    const auto& [rel, data] = o.d.files[i];
    std::string got(data.size(), '\0');
    auto n = source.Read(*m.Resolve(rel), 0, got.size(), got.data());
    if (!n.ok() || got != data) ++bad;
  }
  planner.join();
  s.Wait();
  CHECK(bad == 0);
  REQUIRE(s.progress().packs_failed == 0);
  CHECK(s.progress().packs_done == o.mine.size());
  o.CheckStaged();
}
