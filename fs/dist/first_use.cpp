#include "fs/dist/first_use.hpp"

#include <algorithm>

namespace clairfs::fs {

std::vector<FileStep> FileSteps(const std::vector<uint64_t>& step) {
  std::vector<FileStep> files;
  for (uint32_t n = 0; n < step.size(); ++n) {
    if (step[n] != UINT64_MAX) files.push_back({n, step[n]});
  }
  return files;
}

std::vector<StageUnit> FirstUseUnits(const format::Manifest& manifest,
                                     const std::vector<uint32_t>& partitions,
                                     const std::vector<uint64_t>& step, uint64_t chunk) {
  chunk = std::max<uint64_t>(chunk, 1);
  const uint64_t alone = std::min(kFirstUseMinRead, chunk);  // a file this large: its own range
  std::vector<uint8_t> mine(manifest.partition_count() + 1, 0);
  for (uint32_t p : partitions) {
    if (p < mine.size()) mine[p] = 1;
  }
  // Each pack's files in offset order.
  std::vector<std::vector<uint32_t>> files(mine.size());
  for (uint32_t n = 0; n < manifest.node_count() && n < step.size(); ++n) {
    const format::NodeRecord& r = manifest.node(n);
    if (manifest.IsDirectory(n) || r.stored_size == 0 || mine[r.partition] == 0) continue;
    files[r.partition].push_back(n);
  }
  std::vector<StageUnit> units;
  for (uint32_t p = 0; p < files.size(); ++p) {
    std::vector<uint32_t>& f = files[p];
    std::sort(f.begin(), f.end(), [&](uint32_t a, uint32_t b) {
      return manifest.node(a).offset < manifest.node(b).offset;
    });
    StageUnit run{UINT64_MAX, p, 0, 0};  // small files taken together
    const auto flush = [&] {
      if (run.size > 0 && run.step != UINT64_MAX) units.push_back(run);
      run = StageUnit{UINT64_MAX, p, 0, 0};
    };
    for (uint32_t n : f) {
      const format::NodeRecord& r = manifest.node(n);
      if (r.stored_size >= alone) {
        flush();
        if (step[n] == UINT64_MAX) continue;
        for (uint64_t off = 0; off < r.stored_size; off += chunk) {
          units.push_back({step[n], p, r.offset + off, std::min(chunk, r.stored_size - off)});
        }
        continue;
      }
      const uint64_t end = r.offset + r.stored_size;
      if (run.size > 0 && end - run.offset > chunk) flush();
      if (run.size == 0) run.offset = r.offset;
      run.size = end - run.offset;
      run.step = std::min(run.step, step[n]);
      if (run.size >= alone) flush();
    }
    flush();
  }
  std::stable_sort(units.begin(), units.end(), [](const StageUnit& a, const StageUnit& b) {
    return a.step != b.step
               ? a.step < b.step
               : (a.partition != b.partition ? a.partition < b.partition : a.offset < b.offset);
  });
  return units;
}

}  // namespace clairfs::fs
