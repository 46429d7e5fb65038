#include "partitioner/pack/inspect.hpp"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <vector>

#include "base/json.hpp"
#include "partitioner/pack/progress.hpp"
#include "partitioner/pack/scan.hpp"

namespace clairfs::pack {
namespace {

struct Stats {
  uint64_t dirs = 0, files = 0, broadcast = 0, raw = 0, stored = 0;
  uint64_t by_codec[3] = {0, 0, 0};
  double max_over_mean = 0, min_over_mean = 0;  // pack bytes of the P partitions
  std::vector<uint32_t> largest;                // node indices, largest first
};

Stats Collect(const format::Manifest& m, size_t largest) {
  Stats s;
  std::vector<uint32_t> files;
  for (uint32_t i = 0; i < m.node_count(); ++i) {
    const format::NodeRecord& r = m.node(i);
    if (m.IsDirectory(i)) {
      ++s.dirs;
      continue;
    }
    ++s.files;
    s.raw += r.size;
    s.stored += r.stored_size;
    if (r.codec < 3) ++s.by_codec[r.codec];
    if (r.flags & format::kNodeFlagBroadcast) ++s.broadcast;
    files.push_back(i);
  }
  const size_t k = std::min(largest, files.size());
  std::partial_sort(files.begin(), files.begin() + k, files.end(), [&](uint32_t a, uint32_t b) {
    return m.node(a).size != m.node(b).size ? m.node(a).size > m.node(b).size : a < b;
  });
  s.largest.assign(files.begin(), files.begin() + k);
  const uint32_t P = m.partition_count();
  uint64_t total = 0, lo = UINT64_MAX, hi = 0;
  for (uint32_t p = 0; p < P; ++p) {
    const uint64_t b = m.partition(p).pack_bytes;
    total += b;
    lo = std::min(lo, b);
    hi = std::max(hi, b);
  }
  const double mean = P ? static_cast<double>(total) / P : 0;
  if (mean > 0) {
    s.max_over_mean = hi / mean;
    s.min_over_mean = lo / mean;
  }
  return s;
}

std::string Iso8601(int64_t unix_seconds) {
  std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

double Ratio(uint64_t raw, uint64_t stored) {
  return stored ? static_cast<double>(raw) / stored : 1.0;
}

std::string Json(const format::Manifest& m, const std::string& out, const Stats& s) {
  const format::ManifestHeader& h = m.header();
  char id[24];
  std::snprintf(id, sizeof id, "%016lx", h.dataset_id);
  clairfs::JsonWriter w;
  w.BeginObject()
      .String("dataset", out)
      .Integer("format_version", h.version)
      .String("dataset_id", id)
      .String("created", Iso8601(h.created_unix))
      .Integer("files", s.files)
      .Integer("directories", s.dirs)
      .Integer("broadcast_files", s.broadcast)
      .Integer("raw_bytes", s.raw)
      .Integer("stored_bytes", s.stored)
      .Number("compression_ratio", Ratio(s.raw, s.stored))
      .Integer("zstd_level", h.zstd_level)
      .Integer("frame_size", h.frame_size)
      .Integer("replicas", h.replicas)
      .Integer("manifest_bytes", m.memory_bytes())
      .BeginObject("codecs")
      .Integer("raw", s.by_codec[0])
      .Integer("zstd", s.by_codec[1])
      .Integer("framed", s.by_codec[2])
      .EndObject()
      .Integer("partition_count", m.partition_count())
      .Number("balance_max_over_mean", s.max_over_mean)
      .Number("balance_min_over_mean", s.min_over_mean)
      .BeginArray("partitions");
  for (uint32_t p = 0; p <= m.partition_count(); ++p) {
    const format::PartitionRecord& r = m.partition(p);
    w.BeginObject()
        .String("pack", m.PackName(p))
        .Integer("files", r.file_count)
        .Integer("raw_bytes", r.raw_bytes)
        .Integer("pack_bytes", r.pack_bytes)
        .EndObject();
  }
  w.EndArray().BeginArray("largest");
  for (uint32_t i : s.largest) {
    w.BeginObject()
        .String("path", m.Path(i))
        .Integer("size", m.node(i).size)
        .Integer("stored", m.node(i).stored_size)
        .EndObject();
  }
  w.EndArray().EndObject();
  return w.str() + "\n";
}

std::string Text(const format::Manifest& m, const std::string& out, const Stats& s) {
  const format::ManifestHeader& h = m.header();
  std::string t;
  char line[512];
  auto add = [&](const char* fmt, auto... args) {
    std::snprintf(line, sizeof line, fmt, args...);
    t += line;
  };
  add("dataset      %s (format v%u, id %016lx, packed %s)\n", out.c_str(), h.version, h.dataset_id,
      Iso8601(h.created_unix).c_str());
  add("files        %lu in %lu directories (%lu broadcast to every node)\n", s.files, s.dirs,
      s.broadcast);
  add("bytes        %s raw, %s stored, ratio %.2fx\n", HumanBytes(s.raw).c_str(),
      HumanBytes(s.stored).c_str(), Ratio(s.raw, s.stored));
  add("encoding     %s, frame size %s; files raw %lu, zstd %lu, framed %lu\n",
      h.zstd_level ? ("zstd level " + std::to_string(h.zstd_level)).c_str() : "no compression",
      HumanBytes(h.frame_size).c_str(), s.by_codec[0], s.by_codec[1], s.by_codec[2]);
  add("manifest     %s (%.0f bytes per file)\n", HumanBytes(m.memory_bytes()).c_str(),
      s.files ? static_cast<double>(m.memory_bytes()) / s.files : 0.0);
  add("partitions   %u, replicas %u; pack bytes max/mean %.3f, min/mean %.3f\n",
      m.partition_count(), h.replicas, s.max_over_mean, s.min_over_mean);
  for (uint32_t p = 0; p <= m.partition_count(); ++p) {
    const format::PartitionRecord& r = m.partition(p);
    add("  %-11s %10u files  %10s raw  %10s packed\n", m.PackName(p).c_str(), r.file_count,
        HumanBytes(r.raw_bytes).c_str(), HumanBytes(r.pack_bytes).c_str());
  }
  if (!s.largest.empty()) t += "largest files\n";
  for (uint32_t i : s.largest) {
    add("  %10s  ", HumanBytes(m.node(i).size).c_str());
    t += Printable(m.Path(i)) + "\n";
  }
  return t;
}

}  // namespace

std::string InspectReport(const format::Manifest& manifest, const std::string& out, bool json,
                          size_t largest) {
  const Stats s = Collect(manifest, largest);
  return json ? Json(manifest, out, s) : Text(manifest, out, s);
}

}  // namespace clairfs::pack
