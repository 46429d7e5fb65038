// The start-up broadcast of the manifest (fs/dist/manifest_envelope.hpp).
#include "fs/dist/manifest_envelope.hpp"

#include <catch2/catch.hpp>
#include <string>

using namespace clairfs;
using namespace clairfs::fs;

TEST_CASE("a manifest envelope carries the bytes through unchanged", "[dist]") {
  const std::vector<char> manifest = {'C', 'L', 'F', 'S', '\0', '\1', '\xff'};
  auto bytes = DecodeManifestEnvelope(EncodeManifestEnvelope(manifest));
  REQUIRE(bytes.ok());
  CHECK(*bytes == manifest);
  auto empty = DecodeManifestEnvelope(EncodeManifestEnvelope(std::vector<char>{}));
  REQUIRE(empty.ok());
  CHECK(empty->empty());
}

TEST_CASE("a manifest envelope carries rank 0's error as an IOError", "[dist]") {
  const Status missing = Status::NotFound("/data/x/manifest: no manifest");
  auto bytes = DecodeManifestEnvelope(EncodeManifestEnvelope(Result<std::vector<char>>(missing)));
  REQUIRE_FALSE(bytes.ok());
  CHECK(bytes.status().err() == EIO);
  CHECK(bytes.status().message().find("rank 0 could not read the manifest") != std::string::npos);
  CHECK(bytes.status().message().find("/data/x/manifest: no manifest") != std::string::npos);
}

TEST_CASE("an empty or unknown envelope is an error, not a manifest", "[dist]") {
  CHECK_FALSE(DecodeManifestEnvelope({}).ok());
  CHECK_FALSE(DecodeManifestEnvelope({'\2', 'C', 'L'}).ok());
}
