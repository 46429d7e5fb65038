// Every damaged byte is detected: a packed dataset is written as real files,
// then each byte of each pack and of the manifest is flipped in turn. A read
// must either fail with Corruption or return exactly the original bytes.
#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "partitioner/format/codec.hpp"
#include "partitioner/format/manifest.hpp"
#include "partitioner/format/pack_file.hpp"
#include "tests/support/format_fixture.hpp"

namespace clairfs::format {
namespace {

struct OnDisk {
  testing::Dataset ds;
  testing::TempDir dir;
  std::shared_ptr<const Manifest> m;
};

std::unique_ptr<OnDisk> WriteSmallDataset() {
  auto ds = testing::BuildDataset(testing::SmallMixedSpec());
  REQUIRE(ds.ok());
  auto out = std::make_unique<OnDisk>();
  out->ds = std::move(ds).value();
  testing::WriteDataset(out->ds, out->dir.path());
  auto m = Manifest::Load(out->dir.path());
  REQUIRE(m.ok());
  out->m = std::move(m).value();
  // The dataset exercises every codec, and framed payloads of both frame kinds.
  CHECK(out->ds.codecs.at("raw.bin") == Codec::kRaw);
  CHECK(out->ds.codecs.at("docs/text file.txt") == Codec::kZstd);
  CHECK(out->ds.codecs.at("docs/framed.dat") == Codec::kFramed);
  CHECK(out->ds.codecs.at("bcast.txt") == Codec::kZstd);
  auto framed = out->m->Resolve("docs/framed.dat");
  REQUIRE(framed.ok());
  const std::vector<char>& pack = out->ds.packs[0];
  FrameTableHeader th;
  std::memcpy(&th, pack.data() + out->m->node(*framed).offset, sizeof th);
  REQUIRE(th.frame_count == 6);
  std::set<uint8_t> frame_codecs;
  for (uint32_t i = 0; i < th.frame_count; ++i) {
    FrameEntry e;
    std::memcpy(&e, pack.data() + out->m->node(*framed).offset + sizeof th + i * sizeof e,
                sizeof e);
    frame_codecs.insert(e.codec);
  }
  CHECK(frame_codecs == std::set<uint8_t>{0, 1});
  return out;
}

void FlipOnDisk(const std::string& path, uint64_t offset, uint8_t mask) {
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  REQUIRE(fd >= 0);
  char c;
  REQUIRE(::pread(fd, &c, 1, static_cast<off_t>(offset)) == 1);
  c = static_cast<char>(c ^ mask);
  REQUIRE(::pwrite(fd, &c, 1, static_cast<off_t>(offset)) == 1);
  ::close(fd);
}

std::string Context(const Manifest& m, uint32_t node) {
  return "ctx[" + m.PackName(m.node(node).partition) + ":" + m.Path(node) + "]";
}

// Opens pack p and reads each of its files. Returns "" when every read either
// failed with Corruption naming its context or matched, and at least one
// failed; otherwise what went wrong.
std::string CheckDamagedPack(const OnDisk& d, uint32_t p) {
  PayloadDecoder decoder;
  auto pack = OpenPack(d.dir.path(), *d.m, p);
  if (!pack.ok()) {
    const Status& st = pack.status();
    if (!st.IsCorruption()) return "OpenPack: " + st.ToString();
    if (st.message().find(d.m->PackName(p)) == std::string::npos) {
      return "OpenPack message does not name the pack: " + st.message();
    }
    return "";
  }
  bool detected = false;
  for (uint32_t i = 0; i < d.m->node_count(); ++i) {
    if (d.m->IsDirectory(i) || d.m->node(i).partition != p) continue;
    const std::string ctx = Context(*d.m, i);
    std::vector<char> out;
    Status st = decoder.ReadAll(**pack, PayloadLocation::Of(d.m->node(i)), &out, ctx);
    if (st.ok()) {
      if (out != d.ds.contents.at(d.m->Path(i))) return ctx + ": served wrong bytes";
      continue;
    }
    if (!st.IsCorruption()) return ctx + ": " + st.ToString();
    if (st.message().find(ctx) == std::string::npos)
      return "message lacks context: " + st.message();
    detected = true;
  }
  return detected ? "" : "no read noticed";
}

TEST_CASE("Every flipped pack byte is detected or harmless", "[corruption]") {
  auto d = WriteSmallDataset();
  uint64_t flips = 0, pack_bytes = 0;
  for (uint32_t p = 0; p <= d->m->partition_count(); ++p) {
    const std::string path = d->dir.path() + "/" + d->m->PackName(p);
    REQUIRE(CheckDamagedPack(*d, p) == "no read noticed");  // undamaged
    const uint64_t size = d->ds.packs[p].size();
    pack_bytes += size;
    for (uint64_t off = 0; off < size; ++off) {
      for (uint8_t mask : {uint8_t{0x01}, uint8_t{0xff}}) {
        FlipOnDisk(path, off, mask);
        std::string err = CheckDamagedPack(*d, p);
        FlipOnDisk(path, off, mask);
        ++flips;
        if (!err.empty()) {
          FAIL_CHECK(d->m->PackName(p) << " byte " << off << " ^ " << int{mask} << ": " << err);
          break;
        }
      }
    }
  }
  CHECK(flips == 2 * pack_bytes);
  CHECK(pack_bytes > 3000);
  for (uint32_t p = 0; p <= d->m->partition_count(); ++p) {
    CHECK(CheckDamagedPack(*d, p) == "no read noticed");  // restored
  }
}

TEST_CASE("Every flipped manifest byte is rejected", "[corruption]") {
  auto d = WriteSmallDataset();
  std::vector<char> bytes = d->ds.manifest;
  REQUIRE(Manifest::Parse(bytes, "m").ok());
  for (size_t off = 0; off < bytes.size(); ++off) {
    for (uint8_t mask : {uint8_t{0x01}, uint8_t{0xff}}) {
      bytes[off] = static_cast<char>(bytes[off] ^ mask);
      Status st = Manifest::Parse(bytes, "flipped-manifest").status();
      bytes[off] = static_cast<char>(bytes[off] ^ mask);
      if (!st.IsCorruption() || st.message().find("flipped-manifest") == std::string::npos) {
        FAIL_CHECK("byte " << off << " ^ " << int{mask} << ": " << st.ToString());
      }
    }
  }
  // Through the file as well.
  const std::string path = d->dir.path() + "/manifest";
  FlipOnDisk(path, bytes.size() / 2, 0x10);
  auto loaded = Manifest::Load(d->dir.path());
  REQUIRE_FALSE(loaded.ok());
  CHECK(loaded.status().IsCorruption());
  CHECK(loaded.status().message().find(path) != std::string::npos);
}

TEST_CASE("VerifyPackChecksum detects a flipped payload byte", "[corruption]") {
  auto d = WriteSmallDataset();
  for (uint32_t p = 0; p <= d->m->partition_count(); ++p) {
    CHECK(VerifyPackChecksum(d->dir.path(), *d->m, p).ok());
  }
  const std::string path = d->dir.path() + "/part-00000";
  FlipOnDisk(path, d->ds.packs[0].size() - 1, 0x01);
  CHECK(OpenPack(d->dir.path(), *d->m, 0).ok());  // the header is intact
  Status st = VerifyPackChecksum(d->dir.path(), *d->m, 0);
  CHECK(st.IsCorruption());
  CHECK(st.message().find(path) != std::string::npos);
  CHECK(VerifyPackChecksum(d->dir.path(), *d->m, 1).ok());
}

// OpenPack must refuse the pack with Corruption naming it.
void RequireBadPack(const OnDisk& d, uint32_t p, const std::string& why) {
  auto pack = OpenPack(d.dir.path(), *d.m, p);
  REQUIRE_FALSE(pack.ok());
  INFO(pack.status().ToString());
  CHECK(pack.status().IsCorruption());
  CHECK(pack.status().message().find(d.dir.path() + "/" + d.m->PackName(p)) != std::string::npos);
  CHECK(pack.status().message().find(why) != std::string::npos);
  CHECK_FALSE(VerifyPackChecksum(d.dir.path(), *d.m, p).ok());
}

TEST_CASE("OpenPack detects a pack of the wrong size or another run", "[corruption]") {
  auto d = WriteSmallDataset();
  const std::string dir = d->dir.path();
  SECTION("truncated") {
    std::filesystem::resize_file(dir + "/part-00000", d->ds.packs[0].size() - 1);
    RequireBadPack(*d, 0, "the manifest says");
  }
  SECTION("extended") {
    std::filesystem::resize_file(dir + "/part-bcast", d->ds.packs[2].size() + 1);
    RequireBadPack(*d, 2, "the manifest says");
  }
  SECTION("another dataset_id") {
    PackHeader h = MakePackHeader(d->m->header().dataset_id + 1, 1);
    int fd = ::open((dir + "/part-00001").c_str(), O_WRONLY | O_CLOEXEC);
    REQUIRE(fd >= 0);
    REQUIRE(::pwrite(fd, &h, sizeof h, 0) == static_cast<ssize_t>(sizeof h));
    ::close(fd);
    RequireBadPack(*d, 1, "does not match the manifest");
  }
  SECTION("another partition's pack under this name") {
    // Same size as part-00001 would be: rebuild it with partition 0's header.
    std::vector<char> bytes = d->ds.packs[1];
    PackHeader h = MakePackHeader(*d->m, 0);
    std::memcpy(bytes.data(), &h, sizeof h);
    REQUIRE(WriteFileAtomically(dir, "part-00001", bytes).ok());
    RequireBadPack(*d, 1, "does not match the manifest");
  }
}

TEST_CASE("OpenPack reports a missing pack as NotFound naming the partition", "[corruption]") {
  auto d = WriteSmallDataset();
  REQUIRE(std::filesystem::remove(d->dir.path() + "/part-00001"));
  auto pack = OpenPack(d->dir.path(), *d->m, 1);
  REQUIRE_FALSE(pack.ok());
  CHECK(pack.status().IsNotFound());
  CHECK(pack.status().err() == ENOENT);
  CHECK(pack.status().message().find("part-00001") != std::string::npos);
  CHECK(pack.status().message().find("partition 1") != std::string::npos);
  CHECK(VerifyPackChecksum(d->dir.path(), *d->m, 1).IsNotFound());
  CHECK(OpenPack(d->dir.path(), *d->m, 0).ok());
  REQUIRE(std::filesystem::remove(d->dir.path() + "/part-bcast"));
  CHECK(OpenPack(d->dir.path(), *d->m, 2).status().message().find("part-bcast") !=
        std::string::npos);
}

}  // namespace
}  // namespace clairfs::format
