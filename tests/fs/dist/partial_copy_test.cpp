// The pieces staging and the job's early reads share: a set of byte ranges,
// and a pack's partial local copy that answers only what was written into it
// and fetches each missing range once however many readers want it.
#include "fs/dist/partial_copy.hpp"

#include <atomic>
#include <catch2/catch.hpp>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "fs/store/range_set.hpp"
#include "tests/fs/dist/dist_fixture.hpp"

using namespace clairfs;
using namespace clairfs::fs;
using namespace std::chrono_literals;

using clairfs::fs::testing::Dataset;

TEST_CASE("a range set merges, covers and finds the gaps", "[dist]") {
  RangeSet r;
  CHECK(r.Add(10, 20) == 0);
  CHECK(r.Add(30, 40) == 0);
  CHECK(r.Add(15, 32) == 7);  // 15-20 and 30-32 were in
  CHECK(r.bytes() == 30);
  CHECK(r.Covers(10, 40));
  CHECK_FALSE(r.Covers(9, 11));
  CHECK(r.Covers(5, 5));
  using Gaps = std::vector<std::pair<uint64_t, uint64_t>>;
  CHECK(r.Gaps(0, 50) == Gaps{{0, 10}, {40, 50}});
  CHECK(r.Gaps(12, 38).empty());
  CHECK(r.Add(50, 60) == 0);
  CHECK(r.Gaps(35, 55) == Gaps{{40, 50}});
  r.Remove(15, 35);  // splits 10-40 into 10-15 and 35-40
  CHECK(r.bytes() == 20);
  CHECK(r.Gaps(0, 60) == Gaps{{0, 10}, {15, 35}, {40, 50}});
  r.Remove(0, 100);
  CHECK(r.bytes() == 0);
  CHECK(r.Gaps(0, 5) == Gaps{{0, 5}});
  // Against a byte map.
  RangeSet q;
  std::vector<uint8_t> in(1000, 0);
  std::mt19937 rng(5);
  for (int i = 0; i < 300; ++i) {
    const uint64_t lo = rng() % 990, hi = lo + rng() % 10;
    uint64_t seen = 0;
    for (uint64_t b = lo; b < hi; ++b) seen += in[b]++ ? 1 : 0;
    CHECK(q.Add(lo, hi) == seen);
    const uint64_t a = rng() % 1000, z = a + rng() % (1000 - a + 1);
    uint64_t at = a;
    for (const auto& [g0, g1] : q.Gaps(a, z)) {
      for (uint64_t b = at; b < g0; ++b) REQUIRE(in[b] != 0);
      for (uint64_t b = g0; b < g1; ++b) REQUIRE(in[b] == 0);
      at = g1;
    }
    for (uint64_t b = at; b < z; ++b) REQUIRE(in[b] != 0);
  }
}

TEST_CASE("a partial copy answers only what was written into it", "[dist]") {
  Dataset d(1, 1);
  using Ranges = std::vector<std::pair<uint64_t, uint64_t>>;
  Ranges fetched;
  auto fetch = [&](uint64_t off, size_t n, char* dst) -> Status {
    fetched.emplace_back(off, off + n);
    std::memset(dst, 'x', n);
    return Status::Ok();
  };
  auto fill = [&](PartialCopy& c, uint64_t lo, uint64_t hi) {
    fetched.clear();
    std::string got(hi - lo, '\0');
    PartialCopy::FillCounts counts;
    REQUIRE(c.Fill(lo, hi, got.data(), fetch, &counts).ok());
    return got;
  };
  auto copy = PartialCopy::Create(d.root + "/copy");
  REQUIRE(copy.ok());
  PartialCopy& c = **copy;
  REQUIRE(c.Write(100, "abcdef", 6).ok());
  CHECK(fill(c, 101, 105) == "bcde");
  CHECK(fetched.empty());
  CHECK(fill(c, 98, 108) == "xxabcdefxx");
  CHECK(fetched == Ranges{{98, 100}, {106, 108}});
  CHECK(fill(c, 96, 110) == "xxxxabcdefxxxx");  // what the last fill fetched was kept
  CHECK(fetched == Ranges{{96, 98}, {108, 110}});
  // A full disk: the write fails, and nothing is answered from the copy any more.
  auto full = PartialCopy::Create("/dev/full");
  REQUIRE(full.ok());
  CHECK((*full)->Write(0, "x", 1).code() != clairfs::Code::kOk);
  for (int i = 0; i < 2; ++i) {
    CHECK(fill(**full, 0, 10) == std::string(10, 'x'));
    CHECK(fetched == Ranges{{0, 10}});
  }
  CHECK_FALSE((*full)->Write(0, "x", 1).ok());
}

TEST_CASE("keeping a range brings only what no one has or is bringing, and waits for nothing",
          "[dist]") {
  Dataset d(1, 1);
  using Ranges = std::vector<std::pair<uint64_t, uint64_t>>;
  Ranges fetched;
  auto fetch = [&](uint64_t off, size_t n, char* dst) -> Status {
    fetched.emplace_back(off, off + n);
    std::memset(dst, 'k', n);
    return Status::Ok();
  };
  auto copy = PartialCopy::Create(d.root + "/copy");
  REQUIRE(copy.ok());
  PartialCopy& c = **copy;
  REQUIRE(c.Write(100, "abcdef", 6).ok());
  // A read is bringing 110-120 (claimed, not written yet): left to it.
  REQUIRE(c.Claim(110, 120) == Ranges{{110, 120}});
  std::string buf(40, '\0');
  PartialCopy::FillCounts counts;
  REQUIRE(c.Keep(95, 125, buf.data(), fetch, &counts).ok());
  CHECK(fetched == Ranges{{95, 100}, {106, 110}, {120, 125}});
  CHECK(counts.written == 5 + 4 + 5);
  CHECK(c.Holds(95, 110));
  CHECK_FALSE(c.Holds(95, 125));  // the read's part is not in yet
  CHECK(c.Holds(120, 125));
  fetched.clear();
  REQUIRE(c.Keep(95, 125, buf.data(), fetch, &counts).ok());
  CHECK(fetched.empty());  // nothing left that no one brings
  // A failed fetch: its claim is let go, so the range's turn fetches it.
  const auto failing = [](uint64_t, size_t, char*) { return Status::IOError("gone", EIO); };
  CHECK_FALSE(c.Keep(130, 140, buf.data(), failing, &counts).ok());
  CHECK(c.Claim(130, 140) == Ranges{{130, 140}});
  // A disabled copy keeps nothing.
  c.Disable();
  fetched.clear();
  REQUIRE(c.Keep(200, 210, buf.data(), fetch, &counts).ok());
  CHECK(fetched.empty());
  CHECK_FALSE(c.Holds(100, 106));
}

TEST_CASE("two fills of one range fetch it once; an abandoned claim is fetched by the other",
          "[dist]") {
  Dataset d(1, 1);
  auto made = PartialCopy::Create(d.root + "/copy");
  REQUIRE(made.ok());
  PartialCopy& copy = **made;
  std::string want(100000, '\0');
  for (size_t i = 0; i < want.size(); ++i) want[i] = static_cast<char>(i * 7);
  std::atomic<uint64_t> fetched{0};
  std::atomic<bool> fail_first{false};
  auto fetch = [&](uint64_t off, size_t n, char* dst) -> Status {
    std::this_thread::sleep_for(30ms);  // long enough for the other fill to come
    if (fail_first.exchange(false)) return Status::IOError("the dataset directory failed", EIO);
    std::memcpy(dst, want.data() + off, n);
    fetched += n;
    return Status::Ok();
  };
  for (bool failing : {false, true}) {
    INFO((failing ? "the first fetch fails" : "both succeed"));
    auto again = PartialCopy::Create(d.root + "/copy" + (failing ? "2" : "1"));
    REQUIRE(again.ok());
    PartialCopy& c = failing ? **again : copy;
    fetched = 0;
    fail_first = failing;
    std::string a(60000, '\0'), b(60000, '\0');
    Status sa, sb;
    PartialCopy::FillCounts ca, cb;
    std::thread first([&] { sa = c.Fill(0, 60000, a.data(), fetch, &ca); });
    std::this_thread::sleep_for(10ms);
    std::thread second([&] { sb = c.Fill(20000, 80000, b.data(), fetch, &cb); });
    first.join();
    second.join();
    CHECK(sb.ok());
    CHECK(b == want.substr(20000, 60000));
    if (!failing) {
      CHECK(sa.ok());
      CHECK(a == want.substr(0, 60000));
      CHECK(fetched == 80000);  // the overlap 20000-60000 once
      CHECK(ca.written + cb.written == 80000);
    } else {
      CHECK_FALSE(sa.ok());  // its claim abandoned: the second fill fetched it
      CHECK(fetched == 60000);
      std::string again(60000, '\0');  // all of it is in the copy now
      PartialCopy::FillCounts counts;
      REQUIRE(c.Fill(20000, 80000, again.data(), fetch, &counts).ok());
      CHECK(fetched == 60000);
      CHECK(again == b);
    }
  }
}
