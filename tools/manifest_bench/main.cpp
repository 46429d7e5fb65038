// clairfs-manifest-bench: how big a manifest of N files is and how fast it
// loads and resolves, without creating N files. Names follow ImageNet-1k's
// shape (1000 class directories of "nXXXXXXXX_NNNNN.JPEG").
//
// usage: clairfs-manifest-bench [--files N] [--dirs D] [--dir TMPDIR] [--repeat R]
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "base/cli.hpp"
#include "partitioner/format/file_io.hpp"
#include "partitioner/format/manifest.hpp"

namespace {

using namespace clairfs;
using Clock = std::chrono::steady_clock;

constexpr char kUsage[] =
    "usage: clairfs-manifest-bench [--files N] [--dirs D] [--dir TMP] [--repeat R]\n";

double Seconds(Clock::time_point a) {
  return std::chrono::duration<double>(Clock::now() - a).count();
}

std::string ClassName(uint64_t d) {
  char b[16];
  std::snprintf(b, sizeof b, "n%08lu", 1440764 + d * 9973);
  return b;
}

std::string FileName(uint64_t d, uint64_t k) {
  return ClassName(d) + "_" + std::to_string(10000 + k) + ".JPEG";
}

Result<std::vector<char>> Build(uint64_t files, uint64_t dirs) {
  format::ManifestBuilder b;
  format::NodeRecord root{};
  root.kind = static_cast<uint8_t>(format::NodeKind::kDirectory);
  root.mode = 040755;
  root.offset = 1;
  root.stored_size = dirs;
  b.AddNode(root, "");
  const uint64_t per = files / dirs;
  uint64_t next_child = 1 + dirs;
  for (uint64_t d = 0; d < dirs; ++d) {
    format::NodeRecord r = root;
    r.parent = 0;
    r.offset = next_child;
    r.stored_size = per + (d < files % dirs ? 1 : 0);
    next_child += r.stored_size;
    b.AddNode(r, ClassName(d));
  }
  uint64_t offset = sizeof(format::PackHeader);
  for (uint64_t d = 0; d < dirs; ++d) {
    const uint64_t n = per + (d < files % dirs ? 1 : 0);
    for (uint64_t k = 0; k < n; ++k) {
      format::NodeRecord f{};
      f.kind = static_cast<uint8_t>(format::NodeKind::kFile);
      f.mode = 0100644;
      f.parent = static_cast<uint32_t>(1 + d);
      f.size = f.stored_size = 110000;
      f.offset = offset;
      offset += f.size;
      b.AddNode(f, FileName(d, k));
    }
  }
  b.header().frame_size = format::kDefaultFrameSize;
  b.partitions().push_back({offset, 0, static_cast<uint32_t>(files), 0, offset - 32});
  b.partitions().push_back({32, 0, 0, 0, 0});
  return b.Serialize();
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t files = 1000000, dirs = 1000, repeat = 5;
  std::string dir = std::filesystem::temp_directory_path().string();
  CLI::App app("clairfs-manifest-bench", "clairfs-manifest-bench");
  cli::AddU64(app, "--files", &files);
  cli::AddU64(app, "--dirs", &dirs);
  cli::AddU64(app, "--repeat", &repeat);
  app.add_option("--dir", dir);
  if (auto done = cli::ParseMain(app, argc, argv, "clairfs-manifest-bench", kUsage)) return *done;
  if (dirs == 0 || files < dirs || repeat == 0) {
    return cli::UsageError("clairfs-manifest-bench",
                           "give --dirs >= 1, --files >= --dirs and --repeat >= 1");
  }
  auto t0 = Clock::now();
  auto bytes = Build(files, dirs);
  if (!bytes.ok()) {
    std::fprintf(stderr, "%s\n", bytes.status().ToString().c_str());
    return 1;
  }
  const double build_s = Seconds(t0);
  const std::string out = dir + "/clairfs-manifest-bench." + std::to_string(::getpid());
  std::filesystem::create_directories(out);
  Status st = format::WriteFileAtomically(out, "manifest", *bytes);
  if (!st.ok()) {
    std::fprintf(stderr, "%s\n", st.ToString().c_str());
    return 1;
  }
  std::vector<double> loads;
  std::shared_ptr<const format::Manifest> m;
  for (uint64_t r = 0; r < repeat; ++r) {  // the file is in the page cache after the write
    t0 = Clock::now();
    auto l = format::Manifest::Load(out);
    loads.push_back(Seconds(t0));
    if (!l.ok()) {
      std::fprintf(stderr, "%s\n", l.status().ToString().c_str());
      return 1;
    }
    m = *l;
  }
  std::sort(loads.begin(), loads.end());
  std::mt19937_64 rng(1);
  const int kLookups = 1000000;
  std::vector<std::string> paths;
  for (int i = 0; i < 1000; ++i) {
    const uint64_t d = rng() % dirs, k = rng() % (files / dirs);
    paths.push_back(ClassName(d) + "/" + FileName(d, k));
  }
  t0 = Clock::now();
  uint64_t found = 0;
  for (int i = 0; i < kLookups; ++i) found += m->Resolve(paths[i % paths.size()]).ok();
  const double lookup_s = Seconds(t0);
  std::filesystem::remove_all(out);
  std::printf(
      "manifest of %lu files in %lu directories: %lu bytes (%.1f bytes per file); built in %.2f s; "
      "load (read + checksums + validation) median %.1f ms, min %.1f ms over %lu runs; "
      "path resolve %.0f ns each (%lu/%d found)\n",
      files, dirs, bytes->size(), static_cast<double>(bytes->size()) / files, build_s,
      loads[loads.size() / 2] * 1e3, loads[0] * 1e3, repeat, lookup_s / kLookups * 1e9, found,
      kLookups);
  return found == static_cast<uint64_t>(kLookups) ? 0 : 1;
}
