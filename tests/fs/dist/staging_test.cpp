// Staging: copies, their progress and order, what they read from the dataset
// directory, and one stream per pack (reads before staging kept for it; the
// pieces it stands on are in partial_copy_test.cpp).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <thread>

#include "fs/dist/distributed_pack_store.hpp"
#include "fs/dist/ownership.hpp"
#include "fs/dist/stager.hpp"
#include "fs/store/payload_source.hpp"
#include "fs/store/posix_pack_store.hpp"
#include "fs/store/source_reads.hpp"
#include "partitioner/format/pack_file.hpp"
#include "partitioner/pack/packer.hpp"
#include "tests/fs/dist/dist_fixture.hpp"
#include "tests/support/stderr_capture.hpp"

namespace stdfs = std::filesystem;
using namespace clairfs;
using namespace clairfs::fs;
using namespace std::chrono_literals;

using clairfs::fs::testing::Dataset;

namespace {
std::string Slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}
}  // namespace

TEST_CASE("staging logs its progress while it copies", "[dist]") {
  Dataset d(4, 1);
  const std::string text = clairfs::testing::CaptureStderr([&] {
    Stager s(d.out(), d.root + "/ssd", d.manifest, {0, 1, 2, 3}, 1, 0ms);
    s.Start();
    s.Wait();
  });
  CHECK(text.find("staging: ") != std::string::npos);
  CHECK(text.find(" copied, ") != std::string::npos);
  CHECK(text.find("packs done, ") != std::string::npos);
  CHECK(text.find("staging done: 4/4 packs") != std::string::npos);
}

TEST_CASE("staging logs no progress before log_every has passed on its clock", "[dist]") {
  Dataset d(4, 1);
  clairfs::FakeClock clock;  // never moves
  const std::string text = clairfs::testing::CaptureStderr([&] {
    Stager s(d.out(), d.root + "/ssd", d.manifest, {0, 1, 2, 3}, 1, 1ms, &clock);
    s.Start();
    s.Wait();
  });
  CHECK(text.find(" copied, ") == std::string::npos);
  CHECK(text.find("staging done: 4/4 packs") != std::string::npos);
}

TEST_CASE("staging copies and verifies, then reuses intact copies", "[dist]") {
  Dataset d(4, 1);
  const std::string local = d.root + "/ssd";
  {
    Stager s(d.out(), local, d.manifest, {0, 2, 4});
    s.Start();
    s.Wait();
    CHECK(s.progress().packs_done == 3);
    CHECK(s.progress().packs_reused == 0);
    CHECK(s.progress().packs_failed == 0);
    CHECK(s.Staged(0) != nullptr);
    CHECK(s.Staged(1) == nullptr);
    CHECK(s.Staged(4) != nullptr);
  }
  {
    Stager again(d.out(), local, d.manifest, {0, 2, 4});
    again.Start();
    again.Wait();
    CHECK(again.progress().packs_reused == 3);
    CHECK(again.progress().bytes_copied == 0);
  }
  // A damaged staged copy is copied again; a damaged source is refused.
  {
    std::fstream f(local + "/part-00002", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    f.put('\x7f');
  }
  {
    std::fstream f(d.out() + "/part-00000", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(200);
    f.put('\x7f');
  }
  stdfs::remove(local + "/part-00000");
  Stager third(d.out(), local, d.manifest, {0, 2});
  third.Start();
  third.Wait();
  CHECK(third.Staged(2) != nullptr);
  CHECK(third.Staged(0) == nullptr);
  CHECK(third.progress().packs_failed == 1);
  REQUIRE(third.errors().size() == 1);
  CHECK_THAT(third.errors()[0], Catch::Contains("part-00000"));
  CHECK_FALSE(stdfs::exists(local + "/.part-00000.staging"));
}

TEST_CASE(
    "packs from an earlier run are used at Start, verified after; a damaged one is copied "
    "again",
    "[dist]") {
  Dataset d(4, 1);
  const std::string local = d.root + "/ssd";
  {
    Stager s(d.out(), local, d.manifest, {0, 1, 2});
    s.Start();
    s.Wait();
    REQUIRE(s.progress().packs_done == 3);
  }
  const uint64_t size1 = d.manifest->partition(1).pack_bytes;
  {  // the last byte of pack 1: past its header, so only the checksum sees it
    std::fstream f(local + "/part-00001", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(size1 - 1));
    f.put('\x5a' ^ Slurp(d.out() + "/part-00001").back());
  }
  REQUIRE(Slurp(local + "/part-00001") != Slurp(d.out() + "/part-00001"));
  const std::string text = clairfs::testing::CaptureStderr([&] {
    Stager again(d.out(), local, d.manifest, {0, 1, 2});
    again.Start();
    // In use as soon as Start returns, before any checksum is verified.
    CHECK(again.Staged(0) != nullptr);
    CHECK(again.Staged(2) != nullptr);
    again.Wait();
    CHECK(again.progress().packs_done == 3);
    CHECK(again.progress().packs_reused == 2);
    CHECK(again.progress().packs_failed == 0);
    CHECK(again.progress().bytes_copied == size1);
    CHECK(again.progress().bytes_verified ==
          d.manifest->partition(0).pack_bytes + d.manifest->partition(2).pack_bytes);
    REQUIRE(again.Staged(1) != nullptr);
    std::string head(64, '\0');
    REQUIRE(again.Staged(1)->ReadExact(size1 - head.size(), head.size(), head.data()).ok());
    CHECK(head == Slurp(d.out() + "/part-00001").substr(size1 - head.size()));
  });
  CHECK_THAT(text, Catch::Contains("3 pack(s) from an earlier run in use"));
  CHECK_THAT(text, Catch::Contains("part-00001 failed its checksum"));
  CHECK(Slurp(local + "/part-00001") == Slurp(d.out() + "/part-00001"));
  CHECK_FALSE(stdfs::exists(local + "/.part-00001.staging"));
}

TEST_CASE("the dataset directory's reads: each byte counted once, the rest as read again",
          "[dist]") {
  SourceReads r(3);
  r.Add(0, 0, 100, SourceRead::kStaging);
  r.Add(0, 50, 100, SourceRead::kDirect);  // 50 of them read before
  r.Add(0, 200, 10, SourceRead::kDirect);
  r.Add(1, 0, 10, SourceRead::kDirect);
  r.Add(1, 10, 10, SourceRead::kDirect);  // touching, not overlapping
  SourceTotals t = r.totals();
  CHECK(t.staged == 100);
  CHECK(t.direct == 130);
  CHECK(t.distinct == 180);
  CHECK(t.reread == 50);
  r.Add(0, 0, 300, SourceRead::kStaging);  // spans both ranges of pack 0 and the gap
  t = r.totals();
  CHECK(t.reread == 50 + 160);
  CHECK(t.distinct == 180 + 140);
  // Against a byte map, over random ranges of two packs.
  SourceReads q(2);
  std::vector<std::vector<uint8_t>> seen(2, std::vector<uint8_t>(4096, 0));
  uint64_t distinct = 0, reread = 0, total = 0;
  std::mt19937 rng(11);
  for (int i = 0; i < 3000; ++i) {
    const uint32_t pack = rng() % 2;
    const uint64_t off = rng() % 4000, len = rng() % 96;
    q.Add(pack, off, len, i % 2 ? SourceRead::kDirect : SourceRead::kStaging);
    total += len;
    for (uint64_t b = off; b < off + len; ++b) (seen[pack][b]++ ? reread : distinct)++;
  }
  t = q.totals();
  CHECK(t.staged + t.direct == total);
  CHECK(t.distinct == distinct);
  CHECK(t.reread == reread);
}

TEST_CASE("staging's copies and the reads of a pack before it is staged are counted", "[dist]") {
  Dataset d(4, 1);
  SourceReads source(d.manifest->partition_count() + 1);
  Stager s(d.out(), d.root + "/ssd", d.manifest, {0, 2});
  s.CountReads(&source);
  s.Start();
  s.Wait();
  const uint64_t p0 = d.manifest->partition(0).pack_bytes;
  const uint64_t p2 = d.manifest->partition(2).pack_bytes;
  SourceTotals t = source.totals();
  CHECK(t.staged == p0 + p2);
  CHECK(t.direct == 0);
  CHECK(t.reread == 0);
  // The dataset directory's pack 0, read again (a fallback, a read before
  // staging was done) and pack 1 for the first time.
  PosixPackStore shared(d.out(), d.manifest, nullptr, &source);
  std::vector<char> buf(100);
  auto f0 = shared.Pack(0);
  REQUIRE(f0.ok());
  REQUIRE((*f0)->ReadExact(10, 100, buf.data()).ok());
  auto f1 = shared.Pack(1);
  REQUIRE(f1.ok());
  REQUIRE((*f1)->ReadExact(0, 100, buf.data()).ok());
  CHECK_FALSE((*f1)->ReadExact(d.manifest->partition(1).pack_bytes, 1, buf.data()).ok());
  t = source.totals();
  CHECK(t.direct == 200);  // a failed read is not counted
  CHECK(t.reread == 100);
  CHECK(t.distinct == p0 + p2 + 100);
}

TEST_CASE("staging copies a pack read before its turn next", "[dist]") {
  Dataset d(4, 1);
  {
    Stager s(d.out(), d.root + "/ssd", d.manifest, {0, 1, 2, 3}, 1, 0ms);
    s.Prefer(3);
    s.Prefer(2);
    s.Prefer(3);                              // once is enough
    s.Prefer(d.manifest->partition_count());  // not this rank's to stage: nothing
    s.Prefer(99);                             // out of range: nothing
    s.Start();
    s.Wait();
    CHECK(s.begun() == std::vector<uint32_t>{3, 2, 0, 1});
    CHECK(s.progress().packs_done == 4);
    CHECK(s.progress().packs_failed == 0);
  }
  // Through the store: a read of a pack not staged yet puts it first.
  stdfs::remove_all(d.root + "/ssd");
  const Ownership own(4, 1, 1);
  Stager s(d.out(), d.root + "/ssd", d.manifest, own.PartitionsOf(0), 1, 0ms);
  DistributedPackStore store(d.out(), d.manifest, own, 0, nullptr, &s, DistOptions{});
  // A file of partition 3, the last in staging's own order.
  auto in3 = std::find_if(d.files.begin(), d.files.end(), [&](const auto& f) {
    return d.manifest->node(*d.manifest->Resolve(f.first)).partition == 3;
  });
  REQUIRE(in3 != d.files.end());
  const uint32_t node = *d.manifest->Resolve(in3->first);
  PackPayloadSource source(d.manifest, &store);
  std::string got(in3->second.size(), '\0');
  REQUIRE(source.Read(node, 0, got.size(), got.data()).ok());
  CHECK(got == in3->second);
  s.Start();
  s.Wait();
  REQUIRE_FALSE(s.begun().empty());
  CHECK(s.begun()[0] == 3);
}

TEST_CASE("one stream per pack: reads before staging are kept, staging reads the rest", "[dist]") {
  Dataset d(4, 1);
  const Ownership own(4, 1, 1);
  const std::vector<uint32_t> mine = own.PartitionsOf(0);
  SourceReads counted(d.manifest->partition_count() + 1);
  const std::string ssd = d.root + "/ssd";
  Stager s(d.out(), ssd, d.manifest, mine, 1, 0ms);
  s.CountReads(&counted);
  DistributedPackStore store(d.out(), d.manifest, own, 0, nullptr, &s, DistOptions{}, &counted);
  PackPayloadSource source(d.manifest, &store);
  // The job reads a file of partition 3 before staging starts, twice.
  auto in3 = std::find_if(d.files.begin(), d.files.end(), [&](const auto& f) {
    return d.manifest->node(*d.manifest->Resolve(f.first)).partition == 3;
  });
  REQUIRE(in3 != d.files.end());
  const uint32_t node = *d.manifest->Resolve(in3->first);
  std::string got(in3->second.size(), '\0');
  REQUIRE(source.Read(node, 0, got.size(), got.data()).ok());
  CHECK(got == in3->second);
  const SourceTotals first = counted.totals();
  CHECK(first.direct > 0);
  CHECK(s.progress().bytes_kept == first.direct);
  CHECK(stdfs::exists(ssd + "/.part-00003.staging"));
  // Its second read is answered by the copy being made: nothing more from the dataset.
  std::fill(got.begin(), got.end(), '\0');
  REQUIRE(source.Read(node, 0, got.size(), got.data()).ok());
  CHECK(got == in3->second);
  CHECK(counted.totals().direct == first.direct);
  s.Start();
  s.Wait();
  REQUIRE(s.progress().packs_failed == 0);
  uint64_t share = 0;
  for (uint32_t p : mine) share += d.manifest->partition(p).pack_bytes;
  const SourceTotals t = counted.totals();
  CHECK(t.reread == 0);  // each byte read from the dataset directory once
  CHECK(t.distinct == share);
  CHECK(t.staged == share - first.direct);
  CHECK(s.progress().bytes_copied == share);
  // The copy is the pack, byte for byte, and no temporary is left.
  for (uint32_t p : mine) {
    const std::string name = d.manifest->PackName(p);
    CHECK(Slurp(ssd + "/" + name) == Slurp(d.out() + "/" + name));
    CHECK_FALSE(stdfs::exists(ssd + "/." + name + ".staging"));
  }
  // Staged: read from the local copy, not the dataset directory.
  REQUIRE(source.Read(node, 0, got.size(), got.data()).ok());
  CHECK(counted.totals().direct == first.direct);
}

TEST_CASE("a pack kept by reads is still refused when the dataset's pack is damaged", "[dist]") {
  Dataset d(2, 1);
  const Ownership own(2, 1, 1);
  Stager s(d.out(), d.root + "/ssd", d.manifest, own.PartitionsOf(0), 1, 0ms);
  DistributedPackStore store(d.out(), d.manifest, own, 0, nullptr, &s, DistOptions{});
  // A read keeps the pack's first bytes; then a byte past them is damaged in
  // the dataset directory: staging's checksum over both refuses the copy.
  auto f = store.Pack(0);
  REQUIRE(f.ok());
  std::vector<char> head(64);
  REQUIRE((*f)->ReadExact(0, head.size(), head.data()).ok());
  {
    std::fstream p(d.out() + "/part-00000", std::ios::in | std::ios::out | std::ios::binary);
    p.seekp(200);
    p.put('\x7f');
  }
  s.Start();
  s.Wait();
  CHECK(s.Staged(0) == nullptr);
  CHECK(s.progress().packs_failed == 1);
  CHECK_FALSE(stdfs::exists(d.root + "/ssd/.part-00000.staging"));
  CHECK_FALSE(stdfs::exists(d.root + "/ssd/part-00000"));
  // Reads go on to the dataset directory.
  REQUIRE((*f)->ReadExact(0, head.size(), head.data()).ok());
}

namespace {
// A pack in the dataset directory whose reads wait until let go.
class HeldPack final : public format::RandomAccessFile {
 public:
  explicit HeldPack(std::unique_ptr<format::PosixRandomAccessFile> pack) : pack_(std::move(pack)) {}
  Status ReadExact(uint64_t offset, size_t size, void* dst) const override {
    reading_ = true;
    while (held_) std::this_thread::sleep_for(1ms);
    return pack_->ReadExact(offset, size, dst);
  }
  const std::string& name() const override { return pack_->name(); }
  void LetGo() { held_ = false; }
  bool reading() const { return reading_; }

 private:
  std::unique_ptr<format::PosixRandomAccessFile> pack_;
  mutable std::atomic<bool> held_{true}, reading_{false};
};
}  // namespace

TEST_CASE("staging pauses while a read of the job reads its packs from the dataset directory",
          "[dist]") {
  // The job reads a file of partition 1 before its staging; the read hangs on
  // the dataset directory. Staging (one thread) copies partition 0 meanwhile
  // only when it does not yield.
  Dataset d(2, 1);
  for (const auto quiet : {0ms, 5ms}) {
    INFO("stage_yield_ms " << quiet.count());
    const std::string ssd = d.root + "/ssd" + std::to_string(quiet.count());
    Stager s(d.out(), ssd, d.manifest, {0, 1}, 1, 0ms);
    s.YieldToReads(quiet);
    auto pack = format::OpenPack(d.out(), *d.manifest, 1);
    REQUIRE(pack.ok());
    HeldPack held(std::move(pack).value());
    const format::RandomAccessFile* reading = s.Reading(1, &held);
    std::string got(100, '\0');
    std::thread job([&] { CHECK(reading->ReadExact(0, got.size(), got.data()).ok()); });
    while (!held.reading()) std::this_thread::sleep_for(1ms);
    s.Start();
    const uint64_t pack0 = d.manifest->partition(0).pack_bytes;
    if (quiet.count() == 0) {
      // Not yielding: partition 0 is copied while the read hangs.
      for (int i = 0; i < 5000 && s.progress().bytes_copied < pack0; ++i) {
        std::this_thread::sleep_for(1ms);
      }
      CHECK(s.progress().bytes_copied >= pack0);
    } else {
      std::this_thread::sleep_for(200ms);
      CHECK(s.progress().bytes_copied == 0);
    }
    held.LetGo();
    job.join();
    s.Wait();
    CHECK(s.progress().packs_failed == 0);
    CHECK(s.progress().packs_done == 2);
    CHECK(Slurp(ssd + "/" + d.manifest->PackName(1)).substr(0, 100) == got);
    CHECK((s.progress().yield_ns > 0) == (quiet.count() > 0));
  }
}
