#include "tools/sim/first_use.hpp"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>

#include "fs/dist/stager.hpp"
#include "partitioner/format/layout.hpp"
#include "partitioner/format/manifest.hpp"

namespace clairfs::sim {

Result<std::vector<FirstUseUnit>> FirstUseOrder(
    const std::vector<uint64_t>& file_bytes,
    const std::vector<std::vector<uint64_t>>& partition_files, const std::vector<uint64_t>& step,
    uint64_t chunk) {
  const size_t files = file_bytes.size();
  if (files + 1 > UINT32_MAX) return Status::InvalidArgument("too many files for a manifest");
  const auto parts = static_cast<uint32_t>(partition_files.size());
  // Each file's payload offset in its pack, as clairfs-partition writes it.
  std::vector<uint64_t> offset(files, 0);
  std::vector<uint32_t> partition_of(files, 0);
  format::ManifestBuilder builder;
  builder.partitions().assign(parts + 1, format::PartitionRecord{});
  for (uint32_t p = 0; p < parts; ++p) {
    format::PartitionRecord& rec = builder.partitions()[p];
    rec.pack_bytes = sizeof(format::PackHeader);
    for (uint64_t f : partition_files[p]) {
      offset[f] = rec.pack_bytes;
      partition_of[f] = p;
      rec.pack_bytes += file_bytes[f];
      rec.raw_bytes += file_bytes[f];
      rec.file_count++;
    }
  }
  builder.partitions()[parts].pack_bytes = sizeof(format::PackHeader);
  format::NodeRecord dir{};
  dir.kind = static_cast<uint8_t>(format::NodeKind::kDirectory);
  dir.mode = 040755;
  dir.offset = 1;
  dir.stored_size = files;
  builder.AddNode(dir, "");
  // Node f + 1 is file f: zero-padded names keep the ids' order.
  char name[24];
  for (size_t f = 0; f < files; ++f) {
    format::NodeRecord r{};
    r.kind = static_cast<uint8_t>(format::NodeKind::kFile);
    r.mode = 0100644;
    r.size = r.stored_size = file_bytes[f];
    r.offset = offset[f];
    r.partition = partition_of[f];
    std::snprintf(name, sizeof name, "f%012zu", f);
    builder.AddNode(r, name);
  }
  builder.header().frame_size = UINT32_MAX;  // every file raw, as one payload
  std::vector<fs::StageUnit> units;
  {
    auto bytes = builder.Serialize();
    if (!bytes.ok()) return bytes.status();
    builder = format::ManifestBuilder();
    auto manifest = format::Manifest::Parse(std::move(bytes).value(), "simulated manifest");
    if (!manifest.ok()) return manifest.status();
    std::vector<uint64_t> node_step(files + 1, UINT64_MAX);  // node 0: the root
    for (size_t f = 0; f < files && f < step.size(); ++f) node_step[f + 1] = step[f];
    std::vector<uint32_t> all(parts);
    for (uint32_t p = 0; p < parts; ++p) all[p] = p;
    units = fs::FirstUseUnits(**manifest, all, node_step, chunk);
  }

  std::vector<FirstUseUnit> out;
  out.reserve(units.size());
  for (const fs::StageUnit& u : units) {
    const std::vector<uint64_t>& pack = partition_files[u.partition];
    // The first file whose payload ends past the range's start.
    const auto it = std::partition_point(pack.begin(), pack.end(), [&](uint64_t f) {
      return offset[f] + file_bytes[f] <= u.offset;
    });
    FirstUseUnit o{u.partition, static_cast<size_t>(it - pack.begin()), 0, u.size, false};
    size_t i = o.begin;
    while (i < pack.size() && offset[pack[i]] < u.offset + u.size) ++i;
    o.end = i;
    o.piece = o.end == o.begin + 1 && u.size < file_bytes[pack[o.begin]];
    if (o.piece) o.offset = u.offset - offset[pack[o.begin]];
    out.push_back(o);
  }
  return out;
}

}  // namespace clairfs::sim
