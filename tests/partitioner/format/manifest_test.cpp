// Manifest round trip: ManifestBuilder -> Serialize -> Parse, every field,
// and the lookups built on the node table.
#include "partitioner/format/manifest.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "partitioner/format/checksum.hpp"
#include "partitioner/format/pack_file.hpp"
#include "tests/support/format_fixture.hpp"

namespace clairfs::format {
namespace {

using testing::BuildDataset;
using testing::Dataset;
using testing::DatasetSpec;
using testing::FileSpec;
using testing::kBaseMtimeNs;

const std::string kUnicode = "\303\274n\303\257c\303\270d\303\251.txt";  // "ünïcødé.txt"

// Partition 3 of 3 is the broadcast pack.
DatasetSpec TreeSpec() {
  DatasetSpec spec;
  spec.partition_count = 3;
  spec.dataset_id = 0xfeedfacecafebeefULL;
  spec.encode.frame_size = 256;
  spec.files = {
      {"top.txt", testing::TextBytes(900, 11), 0, 0100644, kBaseMtimeNs + 1},
      {"a/with space.txt", testing::RandomBytes(120, 12), 1, 0100600, kBaseMtimeNs + 2},
      {"a/" + kUnicode, testing::TextBytes(64, 13), 2, 0100644, -5'000'000'000},
      {"a/new\nline", testing::RandomBytes(3, 14), 0, 0100755, kBaseMtimeNs + 4},
      {"a/B.txt", testing::MixedFrames(1000, 256, 15), 1, 0100444, kBaseMtimeNs + 5},
      {"a/b/c", testing::TextBytes(300, 16), 2, 0100644, kBaseMtimeNs + 6},
      {"a/b/zeta.bin", {}, 0, 0100644, kBaseMtimeNs + 7},
      {"bcast/shared.txt", testing::TextBytes(200, 17), 3, 0100644, kBaseMtimeNs + 8},
  };
  spec.empty_dirs = {"empty", "a/b/deeper"};
  return spec;
}

// Breadth-first, children sorted bytewise ('B' < 'b' < 'n' < 'w' < 0xc3).
const std::vector<std::string> kExpectedPaths = {"",
                                                 "a",
                                                 "bcast",
                                                 "empty",
                                                 "top.txt",
                                                 "a/B.txt",
                                                 "a/b",
                                                 "a/new\nline",
                                                 "a/with space.txt",
                                                 "a/" + kUnicode,
                                                 "bcast/shared.txt",
                                                 "a/b/c",
                                                 "a/b/deeper",
                                                 "a/b/zeta.bin"};

struct Parsed {
  Dataset ds;
  std::shared_ptr<const Manifest> m;
};

Parsed BuildAndParse() {
  auto ds = BuildDataset(TreeSpec());
  REQUIRE(ds.ok());
  auto m = Manifest::Parse(ds->manifest, "tree-manifest");
  REQUIRE(m.ok());
  return {std::move(ds).value(), std::move(m).value()};
}

TEST_CASE("Manifest round trip keeps breadth-first sorted paths", "[manifest]") {
  auto [ds, m] = BuildAndParse();
  REQUIRE(m->node_count() == kExpectedPaths.size());
  for (uint32_t i = 0; i < m->node_count(); ++i) {
    INFO("node " << i);
    CHECK(m->Path(i) == kExpectedPaths[i]);
    auto r = m->Resolve(kExpectedPaths[i]);
    REQUIRE(r.ok());
    CHECK(*r == i);
    const std::string& p = kExpectedPaths[i];
    std::string leaf = p.substr(p.rfind('/') == std::string::npos ? 0 : p.rfind('/') + 1);
    CHECK(m->name(i) == leaf);
    CHECK(m->IsDirectory(i) == (ds.contents.count(p) == 0));
  }
  CHECK(m->node(0).parent == 0);
  CHECK(m->ChildCount(0) == 4);
  CHECK(m->FirstChild(0) == 1);
  CHECK(m->ChildCount(1) == 5);  // a
  CHECK(m->FirstChild(1) == 5);
  CHECK(m->ChildCount(2) == 1);  // bcast
  CHECK(m->FirstChild(2) == 10);
  CHECK(m->ChildCount(3) == 0);  // empty
  CHECK(m->ChildCount(6) == 3);  // a/b
  CHECK(m->FirstChild(6) == 11);
  CHECK(m->ChildCount(12) == 0);  // a/b/deeper
  for (uint32_t d = 0; d < m->node_count(); ++d) {
    if (!m->IsDirectory(d)) continue;
    CHECK(m->node(d).size == 0);
    CHECK(m->node(d).mode == 040755u);
    for (uint32_t c = m->FirstChild(d); c < m->FirstChild(d) + m->ChildCount(d); ++c) {
      CHECK(m->node(c).parent == d);
      if (c > m->FirstChild(d)) CHECK(m->name(c - 1) < m->name(c));
    }
  }
}

TEST_CASE("Manifest round trip keeps every file field and payload", "[manifest]") {
  auto [ds, m] = BuildAndParse();
  const DatasetSpec spec = TreeSpec();
  PayloadDecoder decoder;
  uint32_t files_seen = 0;
  for (const FileSpec& f : spec.files) {
    INFO("file " << f.path);
    auto r = m->Resolve(f.path);
    REQUIRE(r.ok());
    const NodeRecord& n = m->node(*r);
    ++files_seen;
    CHECK(n.kind == static_cast<uint8_t>(NodeKind::kFile));
    CHECK(n.size == f.data.size());
    CHECK(n.partition == f.partition);
    CHECK(n.mode == f.mode);
    CHECK(n.mtime_ns == f.mtime_ns);
    CHECK(n.flags == (f.partition == 3 ? kNodeFlagBroadcast : 0));
    CHECK(n.codec == static_cast<uint8_t>(ds.codecs.at(f.path)));
    CHECK(n.offset >= sizeof(PackHeader));
    CHECK(n.offset + n.stored_size <= ds.packs[f.partition].size());
    if (n.codec == static_cast<uint8_t>(Codec::kRaw)) CHECK(n.stored_size == n.size);
    MemoryFile pack("pack", ds.packs[f.partition]);
    std::vector<char> out;
    REQUIRE(decoder.ReadAll(pack, PayloadLocation::Of(n), &out, f.path).ok());
    CHECK(testing::Mismatch(out, f.data) == "");
  }
  CHECK(files_seen == 8);
  // The spec exercises every codec.
  CHECK(ds.codecs.at("top.txt") == Codec::kFramed);
  CHECK(ds.codecs.at("a/B.txt") == Codec::kFramed);
  CHECK(ds.codecs.at("a/new\nline") == Codec::kRaw);
  CHECK(ds.codecs.at("a/b/c") == Codec::kFramed);
  CHECK(ds.codecs.at("bcast/shared.txt") == Codec::kZstd);
}

TEST_CASE("Manifest header and partition table round trip", "[manifest]") {
  auto [ds, m] = BuildAndParse();
  const ManifestHeader& h = m->header();
  CHECK(std::equal(h.magic, h.magic + 8, kManifestMagic));
  CHECK(h.version == kFormatVersion);
  CHECK(h.header_size == sizeof(ManifestHeader));
  CHECK(h.dataset_id == 0xfeedfacecafebeefULL);
  CHECK(h.node_count == 14);
  CHECK(h.file_count == 8);
  CHECK(h.partition_count == 3);
  CHECK(m->partition_count() == 3);
  CHECK(h.replicas == 2);
  CHECK(h.frame_size == 256);
  CHECK(h.zstd_level == 3);
  CHECK(h.created_unix == 1'700'000'000);
  uint64_t raw = 0, names = 0;
  for (const auto& [path, data] : ds.contents) raw += data.size();
  for (uint32_t i = 0; i < m->node_count(); ++i) names += m->name(i).size();
  CHECK(h.raw_bytes == raw);
  CHECK(h.string_bytes == names);
  uint64_t stored = 0;
  for (uint32_t p = 0; p <= 3; ++p) {
    INFO("partition " << p);
    const PartitionRecord& pr = m->partition(p);
    CHECK(pr.pack_bytes == ds.packs[p].size());
    CHECK(pr.pack_checksum == Checksum(ds.packs[p].data(), ds.packs[p].size()));
    stored += ds.packs[p].size() - sizeof(PackHeader);
    uint64_t part_raw = 0, part_files = 0;
    for (const FileSpec& f : TreeSpec().files) {
      part_raw += f.partition == p ? f.data.size() : 0;
      part_files += f.partition == p ? 1 : 0;
    }
    CHECK(pr.file_count == part_files);
    CHECK(pr.raw_bytes == part_raw);
  }
  CHECK(m->partition(0).file_count == 3);
  CHECK(m->partition(3).file_count == 1);
  CHECK(h.stored_bytes == stored);
  CHECK(h.stored_bytes < h.raw_bytes);
  CHECK(m->memory_bytes() == ds.manifest.size());
  CHECK(ds.manifest.size() ==
        sizeof(ManifestHeader) + 4 * sizeof(PartitionRecord) + 14 * sizeof(NodeRecord) + names);
}

TEST_CASE("Manifest Lookup finds children by binary search", "[manifest]") {
  auto [ds, m] = BuildAndParse();
  const uint32_t a = *m->Lookup(0, "a");
  CHECK(a == 1);
  CHECK(m->Lookup(0, "top.txt") == 4u);
  CHECK(m->Lookup(a, "B.txt") == 5u);   // first child
  CHECK(m->Lookup(a, kUnicode) == 9u);  // last child, high bytes
  CHECK(m->Lookup(a, "new\nline") == 7u);
  CHECK(m->Lookup(a, "with space.txt") == 8u);
  CHECK_FALSE(m->Lookup(a, "A").has_value());  // before the first
  CHECK_FALSE(m->Lookup(a, "zzz").has_value());
  CHECK_FALSE(m->Lookup(a, "\xff").has_value());  // after the last
  CHECK_FALSE(m->Lookup(a, "new").has_value());   // a prefix of a child
  CHECK_FALSE(m->Lookup(a, "c").has_value());     // a grandchild's name
  CHECK_FALSE(m->Lookup(a, "").has_value());
  CHECK_FALSE(m->Lookup(3, "x").has_value());        // empty directory
  CHECK_FALSE(m->Lookup(4, "top.txt").has_value());  // a file has no children
  CHECK_FALSE(m->Lookup(11, "").has_value());
}

TEST_CASE("Manifest Resolve walks paths and reports misses", "[manifest]") {
  auto [ds, m] = BuildAndParse();
  auto c = m->Resolve("a/b/c");
  REQUIRE(c.ok());
  CHECK(*c == 11);
  auto root = m->Resolve("");
  REQUIRE(root.ok());
  CHECK(*root == 0);
  auto miss = m->Resolve("missing");
  REQUIRE_FALSE(miss.ok());
  CHECK(miss.status().IsNotFound());
  CHECK(miss.status().err() == ENOENT);
  CHECK(miss.status().message().find("missing") != std::string::npos);
  CHECK(m->Resolve("a/b/c/x").status().IsNotFound());  // through a file
  CHECK(m->Resolve("a/b/missing").status().IsNotFound());
  CHECK(m->Resolve("..").status().IsNotFound());
  CHECK(m->Resolve("a/..").status().IsNotFound());
  CHECK(m->Resolve("A").status().IsNotFound());  // bytewise, case-sensitive
}

TEST_CASE("Pack names count partitions and name the broadcast pack", "[manifest]") {
  auto [ds, m] = BuildAndParse();
  CHECK(m->PackName(0) == "part-00000");
  CHECK(m->PackName(2) == "part-00002");
  CHECK(m->PackName(3) == "part-bcast");
  CHECK(PackFileName(0, 1) == "part-00000");
  CHECK(PackFileName(1, 1) == "part-bcast");
  CHECK(PackFileName(12345, 20000) == "part-12345");
  CHECK(PackFileName(99999, 100000) == "part-99999");
  CHECK(std::string(kBroadcastPackName) == "part-bcast");
}

TEST_CASE("Manifest Load reads a directory or a file path", "[manifest]") {
  auto ds = BuildDataset(TreeSpec());
  REQUIRE(ds.ok());
  testing::TempDir dir;
  testing::WriteDataset(*ds, dir.path());
  for (const std::string& path : {dir.path(), dir.path() + "/manifest"}) {
    auto m = Manifest::Load(path);
    REQUIRE(m.ok());
    CHECK((*m)->node_count() == 14);
    CHECK((*m)->Path(13) == "a/b/zeta.bin");
  }
  testing::TempDir empty;
  auto none = Manifest::Load(empty.path());
  REQUIRE_FALSE(none.ok());
  CHECK(none.status().IsNotFound());
  CHECK(none.status().message().find(empty.path() + "/manifest") != std::string::npos);
}

TEST_CASE("ManifestBuilder refuses to serialize an invalid tree", "[manifest]") {
  ManifestBuilder b;
  NodeRecord dir{};
  dir.kind = static_cast<uint8_t>(NodeKind::kDirectory);
  dir.mode = 040755;
  dir.offset = 1;
  dir.stored_size = 2;
  b.AddNode(dir, "");
  NodeRecord child = dir;
  child.offset = 3;
  child.stored_size = 0;
  b.AddNode(child, "zz");
  b.AddNode(child, "aa");  // children out of order
  b.header().frame_size = kDefaultFrameSize;
  b.partitions().resize(1);
  auto bytes = b.Serialize();
  REQUIRE_FALSE(bytes.ok());
  CHECK(bytes.status().code() == Code::kInvalidArgument);
  CHECK(bytes.status().message().find("not sorted") != std::string::npos);
}

}  // namespace
}  // namespace clairfs::format
