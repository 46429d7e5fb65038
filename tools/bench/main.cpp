// clairfs-bench: reads a list of files in a seeded random order with T
// threads and reports files/s and MB/s (MB = 10^6 bytes), one line or JSON.
// Exit status: 0 success, 1 a file failed, 2 bad usage.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "base/cli.hpp"
#include "base/json.hpp"
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

int Usage(const std::string& why) { return clairfs::cli::UsageError("clairfs-bench", why); }

}  // namespace

int main(int argc, char** argv) {
  clairfs::bench::BenchOptions o;
  std::string list, label = "bench", write_list;
  bool walk = false, json = false, metadata = false;
  uint64_t threads = o.threads;
  CLI::App app("clairfs-bench", "clairfs-bench");
  app.add_option("--list", list);
  app.add_option("--root", o.root);
  app.add_option("--label", label);
  app.add_option("--write-list", write_list);
  app.add_flag("--walk", walk);
  app.add_flag("--json", json);
  app.add_flag("--metadata", metadata);
  clairfs::cli::AddU64(app, "--threads", &threads);
  clairfs::cli::AddU64(app, "--seed", &o.seed);
  clairfs::cli::AddU64(app, "--limit", &o.limit);
  clairfs::cli::AddU64(app, "--chunk", &o.chunk);
  if (auto done = clairfs::cli::ParseMain(app, argc, argv, "clairfs-bench", kUsage)) return *done;
  if (threads < 1 || threads > 1024) return Usage("--threads must be in 1..1024");
  if (o.chunk < 1) return Usage("--chunk must be at least 1");
  o.threads = static_cast<uint32_t>(threads);
  if (metadata) o.mode = clairfs::bench::Mode::kMetadata;
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
    clairfs::JsonWriter w;
    w.BeginObject()
        .String("label", label)
        .String("mode", mode)
        .Integer("threads", o.threads)
        .Integer("files", r.files)
        .Integer("bytes", r.bytes)
        .Integer("errors", r.errors)
        .Number("seconds", r.seconds)
        .Number("files_per_s", fps)
        .Number("mb_per_s", mbps)
        .EndObject();
    std::printf("%s\n", w.str().c_str());
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
