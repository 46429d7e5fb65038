// clairfs-bench: reads a list of files in a seeded random order with T
// threads and reports files/s and MB/s (MB = 10^6 bytes), one line or JSON.
// Exit status: 0 success, 1 a file failed, 2 bad usage.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "tools/bench/bench.hpp"

namespace {

const char kUsage[] =
    "usage: clairfs-bench (--list FILE | --walk) [--root DIR] [--threads T] [--seed S]\n"
    "                     [--limit N] [--chunk BYTES] [--metadata] [--json] [--label NAME]\n"
    "                     [--write-list FILE]\n"
    "  --list FILE        paths, one per line (relative to --root if given)\n"
    "  --walk             take the list from a walk of --root (regular files)\n"
    "  --write-list FILE  save the (unshuffled) list and exit, to reuse it elsewhere\n"
    "  --metadata         stat + open + close only, no reads\n"
    "  --threads T [1]  --seed S [0]  --limit N [all]  --chunk BYTES [1048576]\n";

int Usage(const std::string& why) {
  std::fprintf(stderr, "clairfs-bench: %s\n%s", why.c_str(), kUsage);
  return 2;
}

bool Number(const char* s, uint64_t* out) {
  char* end = nullptr;
  unsigned long long v = std::strtoull(s, &end, 10);
  if (*s == '\0' || *end != '\0') return false;
  *out = v;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  clairfs::bench::BenchOptions o;
  std::string list, label = "bench", write_list;
  bool walk = false, json = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](uint64_t* out) { return i + 1 < argc && Number(argv[++i], out); };
    uint64_t v = 0;
    if (a == "--list" && i + 1 < argc) {
      list = argv[++i];
    } else if (a == "--root" && i + 1 < argc) {
      o.root = argv[++i];
    } else if (a == "--label" && i + 1 < argc) {
      label = argv[++i];
    } else if (a == "--write-list" && i + 1 < argc) {
      write_list = argv[++i];
    } else if (a == "--walk") {
      walk = true;
    } else if (a == "--json") {
      json = true;
    } else if (a == "--metadata") {
      o.mode = clairfs::bench::Mode::kMetadata;
    } else if (a == "--threads" && value(&v) && v >= 1 && v <= 1024) {
      o.threads = static_cast<uint32_t>(v);
    } else if (a == "--seed" && value(&v)) {
      o.seed = v;
    } else if (a == "--limit" && value(&v)) {
      o.limit = v;
    } else if (a == "--chunk" && value(&v) && v >= 1) {
      o.chunk = v;
    } else if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else {
      return Usage("bad or incomplete option '" + a + "'");
    }
  }
  if (walk == !list.empty()) return Usage("give exactly one of --list and --walk");
  if (walk && o.root.empty()) return Usage("--walk needs --root");
  std::vector<std::string> files;
  if (walk) {
    files = clairfs::bench::WalkFiles(o.root);
  } else {
    std::ifstream in(list);
    if (!in) return Usage("cannot read " + list);
    for (std::string line; std::getline(in, line);) {
      if (!line.empty()) files.push_back(line);
    }
  }
  if (!write_list.empty()) {
    std::ofstream out(write_list);
    for (const std::string& f : files) out << f << '\n';
    return out ? 0 : 1;
  }
  const auto ordered = clairfs::bench::Order(std::move(files), o.seed, o.limit);
  const auto r = clairfs::bench::RunBench(ordered, o);
  const double fps = r.seconds > 0 ? static_cast<double>(r.files) / r.seconds : 0;
  const double mbps = r.seconds > 0 ? static_cast<double>(r.bytes) / 1e6 / r.seconds : 0;
  const char* mode = o.mode == clairfs::bench::Mode::kRead ? "read" : "metadata";
  if (json) {
    std::printf(
        "{\"label\": \"%s\", \"mode\": \"%s\", \"threads\": %u, \"files\": %llu, \"bytes\": "
        "%llu, \"errors\": %llu, \"seconds\": %.6f, \"files_per_s\": %.1f, \"mb_per_s\": %.1f}\n",
        label.c_str(), mode, o.threads, (unsigned long long)r.files, (unsigned long long)r.bytes,
        (unsigned long long)r.errors, r.seconds, fps, mbps);
  } else {
    std::printf(
        "%s %s threads=%u files=%llu bytes=%llu errors=%llu seconds=%.3f files/s=%.0f "
        "MB/s=%.1f\n",
        label.c_str(), mode, o.threads, (unsigned long long)r.files, (unsigned long long)r.bytes,
        (unsigned long long)r.errors, r.seconds, fps, mbps);
  }
  if (r.errors != 0) {
    std::fprintf(stderr, "clairfs-bench: %llu errors, first: %s\n", (unsigned long long)r.errors,
                 r.first_error.c_str());
    return 1;
  }
  return 0;
}
