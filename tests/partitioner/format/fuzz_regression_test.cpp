// Inputs the fuzz targets (tests/fuzz, docs/reliability.md) found to break
// the format code, as ordinary unit tests. The undefined behaviour among them
// is caught by the sanitized CI tier (scripts/test.sh --sanitize address);
// every test also checks the outcome the input must have. The raw inputs are
// kept in tests/fuzz/regressions/<target>/ and replayed by scripts/fuzz.sh.
#include <catch2/catch.hpp>
#include <vector>

#include "partitioner/format/codec.hpp"
#include "partitioner/format/file_io.hpp"

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

}  // namespace
}  // namespace clairfs::format
