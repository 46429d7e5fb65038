// A dataset built in memory (tests/support/format_fixture) and read through the
// core's PackPayloadSource over a MemoryPackStore: what the core's unit tests
// serve without pack files or FUSE. Fixtures derive from it.
#pragma once

#include <catch2/catch.hpp>
#include <memory>

#include "fs/store/memory_pack_store.hpp"
#include "fs/store/payload_source.hpp"
#include "partitioner/format/manifest.hpp"
#include "tests/support/format_fixture.hpp"

namespace clairfs::fs {

struct MemoryDataset {
  explicit MemoryDataset(const format::testing::DatasetSpec& spec) {
    auto ds = format::testing::BuildDataset(spec);
    REQUIRE(ds.ok());
    dataset = std::move(ds).value();
    auto m = format::Manifest::Parse(dataset.manifest, "test manifest");
    REQUIRE(m.ok());
    manifest = *m;
    store = std::make_unique<MemoryPackStore>(dataset.packs);
    source = std::make_unique<PackPayloadSource>(manifest, store.get());
  }

  format::testing::Dataset dataset;
  std::shared_ptr<const format::Manifest> manifest;
  std::unique_ptr<MemoryPackStore> store;
  std::unique_ptr<PackPayloadSource> source;
};

}  // namespace clairfs::fs
