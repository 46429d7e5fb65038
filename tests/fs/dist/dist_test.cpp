// Ownership and the distributed store over the loopback transport (staging:
// staging_test.cpp).
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include "fs/dist/distributed_pack_store.hpp"
#include "fs/dist/ownership.hpp"
#include "fs/dist/path_template.hpp"
#include "fs/dist/stager.hpp"
#include "fs/net/loopback_transport.hpp"
#include "fs/store/payload_source.hpp"
#include "fs/store/posix_pack_store.hpp"
#include "fs/store/source_reads.hpp"
#include "partitioner/format/file_io.hpp"
#include "partitioner/pack/packer.hpp"
#include "tests/fs/dist/dist_fixture.hpp"
#include "tests/support/stderr_capture.hpp"

namespace stdfs = std::filesystem;
using namespace clairfs;
using namespace clairfs::fs;
using namespace std::chrono_literals;

using clairfs::fs::testing::Dataset;
using clairfs::fs::testing::Mismatches;
using clairfs::fs::testing::Ranks;

TEST_CASE("ownership: every partition on K distinct ranks, home first", "[dist]") {
  for (int ranks : {1, 2, 3, 4, 7}) {
    for (uint32_t k : {1u, 2u, 3u}) {
      Ownership own(10, k, ranks);
      const uint32_t kk = std::min<uint32_t>(k, ranks);
      for (uint32_t p = 0; p < 10; ++p) {
        auto owners = own.Owners(p);
        REQUIRE(owners.size() == kk);
        CHECK(owners[0] == static_cast<int>(p % ranks));
        CHECK(std::set<int>(owners.begin(), owners.end()).size() == kk);
        for (int r = 0; r < ranks; ++r) {
          CHECK(own.Holds(r, p) == (std::find(owners.begin(), owners.end(), r) != owners.end()));
        }
      }
      CHECK(own.Owners(10).size() == static_cast<size_t>(ranks));  // broadcast pack
      size_t held = 0;
      for (int r = 0; r < ranks; ++r) held += own.PartitionsOf(r).size();
      CHECK(held == 10 * kk + ranks);
    }
  }
}

TEST_CASE("ownership with homes: replicas follow each home", "[dist]") {
  const Ownership own(4, 2, 3, {2, 2, 0, 1});
  CHECK(own.Owners(0) == std::vector<int>{2, 0});
  CHECK(own.Owners(1) == std::vector<int>{2, 0});
  CHECK(own.Owners(2) == std::vector<int>{0, 1});
  CHECK(own.Owners(4) == std::vector<int>{0, 1, 2});  // the broadcast pack
  for (int r = 0; r < 3; ++r) {
    for (uint32_t p = 0; p <= 4; ++p) {
      const auto o = own.Owners(p);
      CHECK(own.Holds(r, p) == (std::find(o.begin(), o.end(), r) != o.end()));
    }
  }
  CHECK(own.PartitionsOf(1) == std::vector<uint32_t>{2, 3, 4});
  // Homes of the wrong size are ignored: p mod N.
  CHECK(Ownership(4, 1, 3, {1}).Owners(1) == std::vector<int>{1});
}

TEST_CASE("partitions are homed on the rank that reads them first", "[dist]") {
  Dataset d(4, 1);
  const format::Manifest& m = *d.manifest;
  std::vector<uint64_t> bytes(4, 0);
  std::vector<int> first(m.node_count(), -1);
  for (uint32_t f = 0; f < m.node_count(); ++f) {
    if (m.IsDirectory(f)) continue;
    bytes[m.node(f).partition] += m.node(f).size;
    first[f] = m.node(f).partition < 2 ? 0 : 1;  // rank 0 reads partitions 0 and 1 first
  }
  Placement p = PlaceByReader(m, 2, first);
  CHECK(p.homes == std::vector<int>{0, 0, 1, 1});
  CHECK(p.moved == 2);  // 1 and 2 left their p mod 2 homes
  CHECK(p.peer_bytes == 0);
  CHECK(p.default_peer_bytes == bytes[1] + bytes[2]);
  // Every file read first by rank 0: it takes the two largest, the others stay spread.
  std::fill(first.begin(), first.end(), 0);
  p = PlaceByReader(m, 2, first);
  const uint32_t big =
      static_cast<uint32_t>(std::max_element(bytes.begin(), bytes.end()) - bytes.begin());
  CHECK(p.homes[big] == 0);
  CHECK(std::count(p.homes.begin(), p.homes.end(), 0) == 2);
  CHECK(std::count(p.homes.begin(), p.homes.end(), 1) == 2);
  // Nothing known: p mod N.
  std::fill(first.begin(), first.end(), -1);
  p = PlaceByReader(m, 2, first);
  CHECK(p.homes == std::vector<int>{0, 1, 0, 1});
  CHECK(p.moved == 0);
}

TEST_CASE("homes by reader from the table's nonzero entries equal those from the table", "[dist]") {
  // Random tables, most entries 0, ties among equal byte counts included;
  // the sparse list is given in shuffled order (its order must not matter).
  std::mt19937_64 rng(7);
  for (int round = 0; round < 50; ++round) {
    const uint32_t parts = 1 + rng() % 24;
    const int ranks = 1 + static_cast<int>(rng() % 9);
    std::vector<std::vector<uint64_t>> table(parts, std::vector<uint64_t>(ranks, 0));
    std::vector<FirstBytes> entries;
    for (uint32_t p = 0; p < parts; ++p) {
      for (int r = 0; r < ranks; ++r) {
        if (rng() % 3 != 0) continue;
        table[p][r] = 1 + rng() % 4;
        entries.push_back({p, r, table[p][r]});
      }
    }
    std::shuffle(entries.begin(), entries.end(), rng);
    const Placement dense = PlaceByReader(table, ranks);
    const Placement sparse = PlaceByReader(entries, parts, ranks);
    CHECK(sparse.homes == dense.homes);
    CHECK(sparse.moved == dense.moved);
    CHECK(sparse.peer_bytes == dense.peer_bytes);
    CHECK(sparse.default_peer_bytes == dense.default_peer_bytes);
  }
  // Out of range or empty entries are ignored, as the table has no place for them.
  const Placement p = PlaceByReader({{0, 1, 5}, {1, 7, 9}, {9, 0, 9}, {1, 0, 0}}, 2, 2);
  CHECK(p.homes == std::vector<int>{1, 0});
  CHECK(p.peer_bytes == 0);
  CHECK(p.default_peer_bytes == 5);
}

TEST_CASE("remote partitions are read from their owners", "[dist]") {
  Dataset d(6, 1);
  Ranks ranks(d, 3);
  for (int r = 0; r < 3; ++r) CHECK(Mismatches(d, ranks.stores[r].get()) == 0);
  for (int r = 0; r < 3; ++r) {
    const DistCounters& c = ranks.stores[r]->counters();
    CHECK(c.peer_reads > 0);
    CHECK(ranks.transports[r]->counters()->reads_served > 0);
    CHECK(c.fallback_reads == 0);
  }
}

TEST_CASE("a dead owner is skipped for a replica, then for the dataset's pack", "[dist]") {
  DistOptions opt;
  opt.peer_timeout = 100ms;
  {
    Dataset d(6, 2);
    Ranks ranks(d, 3, opt);
    ranks.fabric->SetDead(1, true);
    CHECK(Mismatches(d, ranks.stores[0].get()) == 0);
    const DistCounters& c = ranks.stores[0]->counters();
    CHECK(c.peer_failures >= 1);   // the first read that went to rank 1 timed out
    CHECK(c.peer_reads > 0);       // rank 2 answered for it and for itself
    CHECK(c.fallback_reads == 0);  // two replicas: nothing needed the shared pack
  }
  {
    Dataset d(6, 1);
    Ranks ranks(d, 3, opt);
    ranks.fabric->SetDead(1, true);
    CHECK(Mismatches(d, ranks.stores[0].get()) == 0);
    CHECK(ranks.stores[0]->counters().fallback_reads > 0);  // rank 1's partitions, from OUT
  }
}

TEST_CASE("bytes damaged on a node's disk are read again from the dataset's pack", "[dist]") {
  Dataset d(4, 1);
  const Ownership own(4, 1, 2);
  const std::string local = d.root + "/ssd1";
  Stager stager(d.out(), local, d.manifest, own.PartitionsOf(1));
  stager.Start();
  stager.Wait();
  REQUIRE(stager.Staged(1) != nullptr);
  // After staging verified it, flip a byte inside every file of partition 1 in
  // rank 1's copy: rank 1 reads it itself, rank 0 gets it as a peer's answer.
  int damaged = 0;
  {
    std::fstream f(local + "/part-00001", std::ios::in | std::ios::out | std::ios::binary);
    for (uint32_t i = 0; i < d.manifest->node_count(); ++i) {
      const format::NodeRecord& r = d.manifest->node(i);
      if (r.kind != static_cast<uint8_t>(format::NodeKind::kFile) || r.partition != 1 ||
          r.stored_size == 0) {
        continue;
      }
      f.seekg(r.offset + r.stored_size / 2);
      const char c = static_cast<char>(f.get());
      f.seekp(r.offset + r.stored_size / 2);
      f.put(static_cast<char>(c ^ 0x20));
      ++damaged;
    }
  }
  REQUIRE(damaged > 0);
  Ranks ranks(d, 2, {}, {nullptr, &stager});
  for (int r = 0; r < 2; ++r) {
    CHECK(Mismatches(d, ranks.stores[r].get()) == 0);
    CHECK(ranks.stores[r]->counters().damaged_rereads >= static_cast<uint64_t>(damaged));
  }
  CHECK(ranks.stores[0]->counters().peer_reads > 0);  // the damaged bytes did come from rank 1
  // Intact copies are not read twice.
  Ranks clean(d, 2);
  CHECK(Mismatches(d, clean.stores[0].get()) == 0);
  CHECK(clean.stores[0]->counters().damaged_rereads == 0);
}

TEST_CASE("a peer's answers damaged on the way are read again from the dataset's pack", "[dist]") {
  Dataset d(6, 1);
  Ranks ranks(d, 3);
  ranks.fabric->SetDamageReplies(1, true);
  CHECK(Mismatches(d, ranks.stores[0].get()) == 0);
  const DistCounters& c = ranks.stores[0]->counters();
  CHECK(c.peer_reads > 0);       // rank 1 did answer, and rank 2 too
  CHECK(c.damaged_rereads > 0);  // rank 1's answers failed their checksum
  CHECK(Mismatches(d, ranks.stores[2].get()) == 0);
}

TEST_CASE("a holder without a copy of its own reads another owner's", "[dist]") {
  // Replicas 2 over 2 ranks: both hold every partition. Rank 1 staged them;
  // rank 0 did not (its staging failed), and then the dataset directory went.
  Dataset d(4, 2);
  const Ownership own(4, 2, 2);
  Stager stager(d.out(), d.root + "/ssd1", d.manifest, own.PartitionsOf(1));
  stager.Start();
  stager.Wait();
  Ranks ranks(d, 2, {}, {nullptr, &stager});
  stdfs::rename(d.out(), d.root + "/gone");
  CHECK(Mismatches(d, ranks.stores[0].get()) == 0);
  CHECK(ranks.stores[0]->counters().peer_reads > 0);
  stdfs::rename(d.root + "/gone", d.out());
}

TEST_CASE("peers refuse reads of partitions they do not hold or past the end", "[dist]") {
  Dataset d(4, 1);
  Ranks ranks(d, 2);
  CHECK(ranks.stores[0]->Serve(1, {1, 0, 10}).status().IsNotFound());
  const uint64_t size = d.manifest->partition(0).pack_bytes;
  CHECK(ranks.stores[0]->Serve(1, {0, size - 5, 10}).status().code() == Code::kInvalidArgument);
  CHECK(ranks.stores[0]->Serve(1, {0, size - 5, 5}).ok());
  // Refusals need no wait: ServeIfCached answers them too.
  auto not_held = ranks.stores[0]->ServeIfCached(1, {1, 0, 10});
  REQUIRE(not_held.has_value());
  CHECK(not_held->status().IsNotFound());
  auto past = ranks.stores[0]->ServeIfCached(1, {0, size - 5, 10});
  REQUIRE(past.has_value());
  CHECK(past->status().code() == Code::kInvalidArgument);
  // Bytes Serve just read (so the pack is open and those pages cached) come
  // at once, the same bytes.
  auto served = ranks.stores[0]->Serve(1, {0, 0, 4096});
  REQUIRE(served.ok());
  auto now = ranks.stores[0]->ServeIfCached(1, {0, 0, 4096});
  REQUIRE(now.has_value());
  REQUIRE(now->ok());
  CHECK(**now == *served);
}

TEST_CASE("ServeIfCached waits for nothing: a pack not opened yet is left to Serve", "[dist]") {
  Dataset d(4, 1);
  Ranks ranks(d, 2);
  CHECK_FALSE(ranks.stores[0]->ServeIfCached(1, {0, 0, 10}).has_value());
}

TEST_CASE("per-rank paths expand rank, host and environment variables", "[dist]") {
  ::setenv("CLAIRFS_TEST_DIR", "/scratch/job7", 1);
  ::unsetenv("CLAIRFS_TEST_UNSET");
  CHECK(*ExpandPath("/tmp/x/mnt{rank}", 3, "n1") == "/tmp/x/mnt3");
  CHECK(*ExpandPath("${CLAIRFS_TEST_DIR}/{host}/ssd{rank}", 0, "node01") ==
        "/scratch/job7/node01/ssd0");
  CHECK(*ExpandPath("$CLAIRFS_TEST_DIR/a", 0, "h") == "/scratch/job7/a");
  CHECK(*ExpandPath("${CLAIRFS_TEST_UNSET:-/tmp}/c", 0, "h") == "/tmp/c");
  CHECK(*ExpandPath("${CLAIRFS_TEST_DIR:-/tmp}/c", 0, "h") == "/scratch/job7/c");
  auto unset = ExpandPath("${CLAIRFS_TEST_UNSET}/c", 0, "h");
  REQUIRE_FALSE(unset.ok());
  CHECK_THAT(unset.status().message(), Catch::Contains("CLAIRFS_TEST_UNSET"));
  CHECK_FALSE(ExpandPath("${OOPS", 0, "h").ok());
  CHECK(*ExpandPath("plain/path", 5, "h") == "plain/path");
}
