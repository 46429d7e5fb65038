// Inputs the fuzz targets (tests/fuzz, docs/reliability.md) found to break
// the format code, as ordinary unit tests. The undefined behaviour among them
// is caught by the sanitized CI tier (scripts/test.sh --sanitize address);
// every test also checks the outcome the input must have. The raw inputs are
// kept in tests/fuzz/regressions/<target>/ and replayed by scripts/fuzz.sh.
#include <catch2/catch.hpp>
#include <vector>

#include "partitioner/format/checksum.hpp"
#include "partitioner/format/codec.hpp"
#include "partitioner/format/file_io.hpp"
#include "partitioner/format/layout.hpp"

namespace clairfs::format {
namespace {

// payload_fuzz: a zstd payload of 0 stored bytes read into an empty scratch
// buffer, whose data() is null - memcpy(nullptr, src, 0) is undefined.
TEST_CASE("fuzz regression: a zstd payload of 0 stored bytes is corrupt", "[fuzz]") {
  const MemoryFile pack("pack", std::vector<char>(32, 0));
  const PayloadLocation loc{26664, 32, 0, 0, Codec::kZstd};
  PayloadDecoder decoder;
  std::vector<char> out;
  const Status st = decoder.ReadAll(pack, loc, &out, "f");
  CHECK(st.IsCorruption());
  std::vector<char> empty;
  CHECK(pack.ReadExact(32, 0, empty.data()).ok());
}

// payload_fuzz (tests/fuzz/regressions/payload/framed-empty-entry-not-raw):
// a frame table whose first entry stores 0 bytes under a codec that is not
// raw. The decoder took the empty scratch buffer's null data() for "a whole
// raw frame already in place" and checksummed a frame's worth of bytes past
// the end of a shorter read.
TEST_CASE("fuzz regression: an empty frame that is not raw is corrupt, not read past", "[fuzz]") {
  FrameTableHeader th{kFrameTableMagic, 1 << 20, 1, 0};
  FrameEntry e{0, 228, {0, 0, 0}, 0};
  std::vector<char> pack(32, 0);  // a pack header's room, then the payload
  pack.insert(pack.end(), reinterpret_cast<const char*>(&th),
              reinterpret_cast<const char*>(&th) + sizeof th);
  pack.insert(pack.end(), reinterpret_cast<const char*>(&e),
              reinterpret_cast<const char*>(&e) + sizeof e);
  const uint64_t table_sum = Checksum(pack.data() + 32, sizeof th + sizeof e);
  const PayloadLocation loc{100000, 32, sizeof th + sizeof e, table_sum, Codec::kFramed};
  const MemoryFile file("pack", std::move(pack));
  PayloadDecoder decoder;
  std::vector<char> part(10);  // a short read: the frame is not whole in it
  auto n = decoder.Read(file, loc, 5, part.size(), part.data(), "f");
  REQUIRE_FALSE(n.ok());
  CHECK(n.status().IsCorruption());
}

}  // namespace
}  // namespace clairfs::format
