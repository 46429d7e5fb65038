// Manifest::Parse rejects damaged and malformed manifests. Structural edits
// are resealed (both checksums recomputed) so the structural check, not a
// checksum, is what has to catch them.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "partitioner/format/checksum.hpp"
#include "partitioner/format/manifest.hpp"
#include "tests/support/format_fixture.hpp"

namespace clairfs::format {
namespace {

using testing::EditHeader;
using testing::EditNode;
using testing::Reseal;

// root -> [a/, b.txt, c.txt], a -> [xyz]: nodes 0 root, 1 a, 2 b.txt, 3 c.txt, 4 a/xyz.
// "xyz" is an only child and the last name in the string pool.
std::vector<char> SmallManifest() {
  testing::DatasetSpec spec;
  spec.files = {{"b.txt", testing::RandomBytes(40, 1)},
                {"c.txt", testing::RandomBytes(50, 2)},
                {"a/xyz", testing::RandomBytes(60, 3)}};
  auto ds = testing::BuildDataset(spec);
  REQUIRE(ds.ok());
  auto m = Manifest::Parse(ds->manifest, "small");
  REQUIRE(m.ok());
  REQUIRE((*m)->Path(4) == "a/xyz");
  return ds->manifest;
}

Status ParseStatus(const std::vector<char>& bytes) {
  return Manifest::Parse(bytes, "test-manifest").status();
}

// Parse must fail with `code` and a message naming the source and saying `why`.
void RequireRejected(const std::vector<char>& bytes, Code code, const std::string& why) {
  Status st = ParseStatus(bytes);
  INFO(st.ToString());
  REQUIRE_FALSE(st.ok());
  CHECK(st.code() == code);
  CHECK(st.message().find("test-manifest") != std::string::npos);
  CHECK(st.message().find(why) != std::string::npos);
}

TEST_CASE("Manifest Parse accepts the unedited and resealed bytes", "[manifest][reject]") {
  std::vector<char> bytes = SmallManifest();
  CHECK(ParseStatus(bytes).ok());
  Reseal(&bytes);  // resealing alone changes nothing
  CHECK(ParseStatus(bytes).ok());
}

TEST_CASE("Manifest Parse rejects bad magic version and checksums", "[manifest][reject]") {
  std::vector<char> bytes = SmallManifest();
  SECTION("wrong magic") {
    bytes[7] = '2';
    RequireRejected(bytes, Code::kCorruption, "bad magic");
  }
  SECTION("wrong version behind a valid header checksum is Unsupported") {
    EditHeader(&bytes, [](ManifestHeader& h) { h.version = 2; });
    RequireRejected(bytes, Code::kCorruption, "header checksum");
    EditHeader(&bytes, [](ManifestHeader& h) {
      h.header_checksum = Checksum(&h, offsetof(ManifestHeader, header_checksum));
    });
    RequireRejected(bytes, Code::kUnsupported, "version 2");
  }
  SECTION("header field changed without resealing") {
    EditHeader(&bytes, [](ManifestHeader& h) { h.reserved[3] = 1; });
    RequireRejected(bytes, Code::kCorruption, "header checksum mismatch");
  }
  SECTION("body byte changed without resealing") {
    bytes.back() ^= 0x20;
    RequireRejected(bytes, Code::kCorruption, "body checksum mismatch");
  }
  SECTION("header size") {
    EditHeader(&bytes, [](ManifestHeader& h) { h.header_size = 64; });
    Reseal(&bytes);
    RequireRejected(bytes, Code::kCorruption, "bad header size");
  }
  SECTION("frame size zero") {
    EditHeader(&bytes, [](ManifestHeader& h) { h.frame_size = 0; });
    Reseal(&bytes);
    RequireRejected(bytes, Code::kCorruption, "frame size is zero");
  }
  SECTION("no nodes") {
    EditHeader(&bytes, [](ManifestHeader& h) { h.node_count = 0; });
    Reseal(&bytes);
    RequireRejected(bytes, Code::kCorruption, "no root");
  }
}

TEST_CASE("Manifest Parse rejects truncated and extended bytes", "[manifest][reject]") {
  const std::vector<char> good = SmallManifest();
  RequireRejected({}, Code::kCorruption, "too short");
  RequireRejected(std::vector<char>(good.begin(), good.begin() + 127), Code::kCorruption,
                  "too short");
  RequireRejected(std::vector<char>(good.begin(), good.begin() + 128), Code::kCorruption, "size");
  std::vector<char> truncated(good.begin(), good.end() - 1);
  RequireRejected(truncated, Code::kCorruption, "the header implies");
  Reseal(&truncated);  // a valid body checksum does not make it whole
  RequireRejected(truncated, Code::kCorruption, "the header implies");
  std::vector<char> extended = good;
  extended.push_back('x');
  Reseal(&extended);
  RequireRejected(extended, Code::kCorruption, "the header implies");
}

TEST_CASE("Manifest Parse rejects size fields that wrap around", "[manifest][reject]") {
  // Claims 2^20 more nodes than present and a string pool "negative" by the
  // same amount, so the 64-bit size sum wraps back to the real file size.
  std::vector<char> bytes = SmallManifest();
  const uint64_t extra = uint64_t{1} << 20;
  EditHeader(&bytes, [extra](ManifestHeader& h) {
    h.node_count += static_cast<uint32_t>(extra);
    h.string_bytes -= extra * sizeof(NodeRecord);
  });
  Reseal(&bytes);
  RequireRejected(bytes, Code::kCorruption, "string pool larger than the manifest");
}

TEST_CASE("Manifest Parse rejects bad names", "[manifest][reject]") {
  std::vector<char> bytes = SmallManifest();
  const size_t xyz = bytes.size() - 3;  // "xyz" ends the string pool
  SECTION("slash in a name") { bytes[xyz + 1] = '/'; }
  SECTION("NUL in a name") { bytes[xyz + 1] = '\0'; }
  SECTION("empty name") {
    EditNode(&bytes, 4, [](NodeRecord& r) { r.name_length = 0; });
  }
  SECTION("dot") {
    bytes[xyz] = '.';
    EditNode(&bytes, 4, [](NodeRecord& r) { r.name_length = 1; });
  }
  SECTION("dot dot") {
    bytes[xyz] = bytes[xyz + 1] = '.';
    EditNode(&bytes, 4, [](NodeRecord& r) { r.name_length = 2; });
  }
  SECTION("root with a name") {
    EditNode(&bytes, 0, [](NodeRecord& r) { r.name_length = 1; });
  }
  SECTION("root that names a parent") {
    EditNode(&bytes, 0, [](NodeRecord& r) { r.parent = 1; });
  }
  Reseal(&bytes);
  RequireRejected(bytes, Code::kCorruption, "invalid name");
}

TEST_CASE("Manifest Parse rejects names outside the string pool", "[manifest][reject]") {
  std::vector<char> bytes = SmallManifest();
  SECTION("just past the end") {
    EditNode(&bytes, 4, [](NodeRecord& r) { r.name_offset += 1000; });
  }
  SECTION("far past the end, on a node the sort check compares") {
    EditNode(&bytes, 3, [](NodeRecord& r) { r.name_offset = 0xfffff000u; });
  }
  Reseal(&bytes);
  RequireRejected(bytes, Code::kCorruption, "name out of range");
}

TEST_CASE("Manifest Parse rejects a broken tree", "[manifest][reject]") {
  std::vector<char> bytes = SmallManifest();
  std::string why;
  SECTION("children not sorted") {
    NodeRecord b, c;
    std::memcpy(&b, bytes.data() + testing::NodeOffset(bytes, 2), sizeof b);
    std::memcpy(&c, bytes.data() + testing::NodeOffset(bytes, 3), sizeof c);
    EditNode(&bytes, 2, [&c](NodeRecord& r) { r.name_offset = c.name_offset; });
    EditNode(&bytes, 3, [&b](NodeRecord& r) { r.name_offset = b.name_offset; });
    why = "not sorted";
  }
  SECTION("duplicate names") {
    NodeRecord b;
    std::memcpy(&b, bytes.data() + testing::NodeOffset(bytes, 2), sizeof b);
    EditNode(&bytes, 3, [&b](NodeRecord& r) { r.name_offset = b.name_offset; });
    why = "not sorted";
  }
  SECTION("wrong parent") {
    EditNode(&bytes, 4, [](NodeRecord& r) { r.parent = 0; });
    why = "parent";
  }
  SECTION("child range starts elsewhere") {
    EditNode(&bytes, 1, [](NodeRecord& r) { r.offset = 3; });
    why = "bad child range";
  }
  SECTION("child range past the node table") {
    EditNode(&bytes, 1, [](NodeRecord& r) { r.stored_size = 2; });
    why = "bad child range";
  }
  SECTION("nodes not reachable from the root") {
    EditNode(&bytes, 0, [](NodeRecord& r) { r.stored_size = 2; });  // drops c.txt
    EditNode(&bytes, 1, [](NodeRecord& r) {
      r.offset = 3;
      r.stored_size = 0;
    });
    why = "not reachable";
  }
  SECTION("a directory that is its own parent") {
    // root -> [a, b.txt], a -> []; c.txt becomes a directory holding itself
    // and xyz. The child counts still add up to node_count, but c.txt and
    // xyz hang in a cycle, off the root, that Path() would walk forever.
    EditNode(&bytes, 0, [](NodeRecord& r) { r.stored_size = 2; });
    EditNode(&bytes, 1, [](NodeRecord& r) {
      r.offset = 3;
      r.stored_size = 0;
    });
    EditNode(&bytes, 3, [](NodeRecord& r) {
      r.kind = static_cast<uint8_t>(NodeKind::kDirectory);
      r.mode = 040755;
      r.size = r.checksum = 0;
      r.codec = 0;
      r.offset = 3;
      r.stored_size = 2;
      r.parent = 3;
    });
    EditNode(&bytes, 4, [](NodeRecord& r) { r.parent = 3; });
    EditHeader(&bytes, [](ManifestHeader& h) { h.file_count = 2; });
    why = "not reachable";
  }
  SECTION("unknown kind") {
    EditNode(&bytes, 2, [](NodeRecord& r) { r.kind = 3; });
    why = "unknown kind";
  }
  SECTION("file count") {
    EditHeader(&bytes, [](ManifestHeader& h) { h.file_count = 4; });
    why = "file count";
  }
  Reseal(&bytes);
  RequireRejected(bytes, Code::kCorruption, why);
}

TEST_CASE("Manifest Parse rejects file records that point nowhere", "[manifest][reject]") {
  std::vector<char> bytes = SmallManifest();
  std::string why = "payload outside its pack";
  SECTION("partition past the broadcast pack") {
    EditNode(&bytes, 2, [](NodeRecord& r) { r.partition = 2; });
    why = "names partition 2";
  }
  SECTION("offset inside the pack header") {
    EditNode(&bytes, 2, [](NodeRecord& r) { r.offset = sizeof(PackHeader) - 1; });
  }
  SECTION("payload ends past the pack") {
    EditNode(&bytes, 4, [](NodeRecord& r) { r.offset += 1; });
  }
  SECTION("stored size larger than the pack") {
    EditNode(&bytes, 2, [](NodeRecord& r) { r.stored_size = r.size = ~uint64_t{0} - 8; });
  }
  SECTION("raw payload of the wrong size") {
    EditNode(&bytes, 2, [](NodeRecord& r) { r.size += 1; });
    why = "bad codec or size";
  }
  SECTION("unknown codec") {
    EditNode(&bytes, 2, [](NodeRecord& r) { r.codec = 3; });
    why = "bad codec or size";
  }
  SECTION("unframed file larger than the frame size") {
    EditHeader(&bytes, [](ManifestHeader& h) { h.frame_size = 1; });
    why = "bad codec or size";
  }
  Reseal(&bytes);
  RequireRejected(bytes, Code::kCorruption, why);
}

}  // namespace
}  // namespace clairfs::format
