// PeerAhead over the loopback transport: a range asked for ahead is taken
// once, by a read inside it; overlapping asks are not sent twice; the budget
// drops the oldest; a failed answer is reported to the taker, never bytes.
#include "fs/dist/peer_ahead.hpp"

#include <catch2/catch.hpp>
#include <memory>
#include <vector>

#include "fs/net/loopback_transport.hpp"

using namespace clairfs;
using namespace clairfs::fs;
using namespace std::chrono_literals;

namespace {

char ByteAt(uint64_t offset) { return static_cast<char>(offset * 7 + 3); }

// Two ranks: rank 1 answers any range of partition 0 with ByteAt, and
// refuses every other partition.
struct Pair {
  Pair() : fabric(std::make_shared<LoopbackFabric>(2)) {
    for (int r = 0; r < 2; ++r) ranks.push_back(std::make_unique<LoopbackTransport>(fabric, r));
    auto serve = [](int, const PackRead& read) -> Result<std::vector<char>> {
      if (read.partition != 0) return Status::NotFound("no such partition here");
      std::vector<char> out(read.length);
      for (uint32_t i = 0; i < read.length; ++i) out[i] = ByteAt(read.offset + i);
      return out;
    };
    for (auto& t : ranks) REQUIRE(t->Start(serve, 2).ok());
  }
  ~Pair() {
    for (auto& t : ranks) t->Stop();
  }
  std::shared_ptr<LoopbackFabric> fabric;
  std::vector<std::unique_ptr<LoopbackTransport>> ranks;
};

bool Right(const std::vector<char>& got, uint64_t offset) {
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] != ByteAt(offset + i)) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("a range asked for ahead is taken once, by a read inside it", "[dist]") {
  Pair pair;
  PeerAhead ahead(pair.ranks[0].get(), 1000ms, 3000);
  ahead.Start(1, 0, 1000, 1000);
  ahead.Start(1, 0, 1500, 100);  // inside it: not asked again
  ahead.Start(1, 0, 1900, 200);  // overlapping it: neither
  ahead.Start(1, 0, 0, 3001);    // more than the whole budget: never asked
  CHECK(ahead.counters().reads == 1);
  CHECK(pair.ranks[0]->counters()->reads_sent == 1);
  std::vector<char> got(300);
  CHECK_FALSE(ahead.Take(0, 900, 300, got.data()).found);   // begins before it
  CHECK_FALSE(ahead.Take(0, 1800, 300, got.data()).found);  // ends past it
  CHECK_FALSE(ahead.Take(1, 1200, 300, got.data()).found);  // another partition
  auto taken = ahead.Take(0, 1200, 300, got.data());
  REQUIRE(taken.found);
  REQUIRE(taken.status.ok());
  CHECK(taken.owner == 1);
  CHECK(Right(got, 1200));
  CHECK_FALSE(ahead.Take(0, 1200, 300, got.data()).found);  // taken once
  CHECK(ahead.counters().taken == 1);
  ahead.Start(1, 0, 1000, 1000);  // taken, so asked for again
  CHECK(ahead.counters().reads == 2);
}

TEST_CASE("ranges asked for ahead stay within their budget, the oldest dropped first", "[dist]") {
  Pair pair;
  PeerAhead ahead(pair.ranks[0].get(), 1000ms, 3000);
  for (uint64_t off : {0, 1000, 2000}) ahead.Start(1, 0, off, 1000);
  CHECK(ahead.counters().dropped == 0);
  ahead.Start(1, 0, 3000, 1000);  // no room: the range at 0 goes
  CHECK(ahead.counters().dropped == 1);
  std::vector<char> got(1000);
  CHECK_FALSE(ahead.Take(0, 0, 1000, got.data()).found);
  for (uint64_t off : {1000, 2000, 3000}) {
    auto taken = ahead.Take(0, off, 1000, got.data());
    REQUIRE(taken.found);
    REQUIRE(taken.status.ok());
    CHECK(Right(got, off));
  }
  // The count of ranges is bounded too, whatever their size.
  PeerAhead many(pair.ranks[0].get(), 1000ms);
  for (uint64_t i = 0; i < PeerAhead::kMaxRanges + 10; ++i) many.Start(1, 0, i * 10, 10);
  CHECK(many.counters().dropped == 10);
  CHECK_FALSE(many.Take(0, 0, 10, got.data()).found);
  CHECK(many.Take(0, 10 * 10, 10, got.data()).found);
}

TEST_CASE("a range whose answer failed is reported to its reader, with no bytes", "[dist]") {
  Pair pair;
  PeerAhead ahead(pair.ranks[0].get(), 100ms);
  std::vector<char> got(100, 'z');
  SECTION("refused by the peer") {
    ahead.Start(1, 7, 0, 100);
    auto taken = ahead.Take(7, 0, 100, got.data());
    REQUIRE(taken.found);
    CHECK_FALSE(taken.status.ok());
  }
  SECTION("a dead peer: the read times out at its deadline") {
    pair.fabric->SetDead(1, true);
    ahead.Start(1, 0, 0, 100);
    auto taken = ahead.Take(0, 0, 100, got.data());
    REQUIRE(taken.found);
    CHECK(taken.status.err() == ETIMEDOUT);
    CHECK(taken.owner == 1);
  }
  CHECK(got == std::vector<char>(100, 'z'));
  CHECK(ahead.counters().failed == 1);
  CHECK(ahead.counters().taken == 0);
}
