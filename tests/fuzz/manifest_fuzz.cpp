// Fuzz target: Manifest::Parse (partitioner/format/manifest.hpp).
//
// Each input is parsed as given and again resealed (both checksums
// recomputed), so that mutations reach the structural checks behind the
// checksums. For every manifest that parses:
//  - each node's Path() resolves back to that node (parents, names, sort order);
//  - rebuilt node by node through ManifestBuilder, it serializes to a manifest
//    that parses to the same nodes, names, partitions and header settings.
// A violation aborts, which libFuzzer reports as a crash.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "partitioner/format/manifest.hpp"
#include "tests/fuzz/fuzz_inputs.hpp"

namespace {

using clairfs::format::Manifest;
using clairfs::format::ManifestBuilder;
using clairfs::format::NodeRecord;
using clairfs::format::PartitionRecord;

void Require(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "manifest_fuzz: invariant violated: %s\n", what);
  std::abort();
}

bool SameNode(const Manifest& a, const Manifest& b, uint32_t i) {
  NodeRecord ra = a.node(i), rb = b.node(i);
  ra.name_offset = rb.name_offset = 0;  // the builder lays out its own string pool
  return std::memcmp(&ra, &rb, sizeof ra) == 0 && a.name(i) == b.name(i);
}

void CheckRebuilt(const Manifest& m) {
  ManifestBuilder b;
  b.header() = m.header();
  for (uint32_t p = 0; p <= m.partition_count(); ++p) b.partitions().push_back(m.partition(p));
  for (uint32_t i = 0; i < m.node_count(); ++i) b.AddNode(m.node(i), m.name(i));
  auto bytes = b.Serialize();
  Require(bytes.ok(), "a parsed manifest does not serialize");
  auto again = Manifest::Parse(std::move(bytes).value(), "rebuilt");
  Require(again.ok(), "a re-serialized manifest does not parse");
  const Manifest& r = **again;
  Require(r.node_count() == m.node_count() && r.partition_count() == m.partition_count(),
          "rebuilt counts differ");
  for (uint32_t i = 0; i < m.node_count(); ++i) Require(SameNode(m, r, i), "rebuilt node differs");
  for (uint32_t p = 0; p <= m.partition_count(); ++p) {
    Require(std::memcmp(&m.partition(p), &r.partition(p), sizeof(PartitionRecord)) == 0,
            "rebuilt partition differs");
  }
  const auto &hm = m.header(), &hr = r.header();
  Require(hm.dataset_id == hr.dataset_id && hm.file_count == hr.file_count &&
              hm.replicas == hr.replicas && hm.frame_size == hr.frame_size &&
              hm.zstd_level == hr.zstd_level && hm.created_unix == hr.created_unix,
          "rebuilt header settings differ");
}

void Check(std::vector<char> bytes) {
  auto parsed = Manifest::Parse(std::move(bytes), "fuzz");
  if (!parsed.ok()) return;
  const Manifest& m = **parsed;
  for (uint32_t i = 0; i < m.node_count(); ++i) {
    auto found = m.Resolve(m.Path(i));
    Require(found.ok() && *found == i, "a node's path does not resolve to it");
  }
  CheckRebuilt(m);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<char> bytes(data, data + size);
  Check(bytes);
  clairfs::fuzz::ResealManifest(&bytes);
  Check(std::move(bytes));
  return 0;
}
