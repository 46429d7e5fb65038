// clairfs-partition: packs a dataset directory for clairfs, verifies a pack
// against its source, and reports what a pack holds.
#include <malloc.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "base/size.hpp"
#include "partitioner/format/manifest.hpp"
#include "base/args.hpp"
#include "partitioner/pack/inspect.hpp"
#include "partitioner/pack/packer.hpp"
#include "partitioner/pack/progress.hpp"
#include "partitioner/pack/verify.hpp"

namespace {

using clairfs::pack::Args;

constexpr char kUsage[] =
    "usage:\n"
    "  clairfs-partition pack SRC OUT --partitions P [--replicas K]\n"
    "      [--compress zstd[:LEVEL]|none] [--placement balanced|hash|contiguous]\n"
    "      [--broadcast GLOB]... [--threads T] [--memory SIZE] [--force]\n"
    "      [--frame-size BYTES] [--min-saving PERCENT] [--external-links refuse|skip|follow]\n"
    "  clairfs-partition verify OUT SRC [--threads T] [--external-links refuse|skip|follow]\n"
    "  clairfs-partition inspect OUT [--json]\n"
    "\n"
    "pack     writes OUT/manifest and OUT/part-NNNNN (+ OUT/part-bcast) from the tree SRC\n"
    "verify   decodes every file in OUT and compares it with SRC; exit 0 only if identical\n"
    "inspect  files, bytes, compression and partition balance of OUT\n"
    "\n"
    "Exit status: 0 success, 1 failure or differences found, 2 usage error.\n";

int UsageError(const std::string& msg) {
  std::fprintf(stderr, "clairfs-partition: %s\n(run 'clairfs-partition --help' for usage)\n",
               msg.c_str());
  return 2;
}

int Fail(const clairfs::Status& st) {
  std::fprintf(stderr, "clairfs-partition: %s\n", st.ToString().c_str());
  return 1;
}

int RunPack(Args& a) {
  clairfs::pack::PackOptions o;
  std::string compress = "zstd";
  uint64_t partitions = 0, replicas = 1, threads = 0, frame = o.frame_size;
  bool threads_given = false;
  double min_saving_pct = o.min_saving * 100;
  a.Value("--partitions", &partitions);
  a.Value("--replicas", &replicas);
  a.Value("--compress", &compress);
  a.Value("--placement", &o.placement);
  a.Repeated("--broadcast", &o.broadcast);
  threads_given = a.Value("--threads", &threads);
  a.Value("--frame-size", &frame);
  a.Value("--min-saving", &min_saving_pct);
  std::string memory;
  const bool memory_given = a.Value("--memory", &memory);
  o.force = a.Flag("--force");
  std::string links = "refuse";
  a.Value("--external-links", &links);
  if (!a.Positionals(2, &o.src, &o.out)) return UsageError(a.error());
  if (!a.error().empty()) return UsageError(a.error());
  if (partitions == 0) return UsageError("--partitions P is required (P >= 1)");
  for (auto [name, v] : {std::pair{"--partitions", partitions}, {"--replicas", replicas},
                         {"--frame-size", frame}, {"--threads", threads}}) {
    if (v > UINT32_MAX) return UsageError(std::string(name) + " " + std::to_string(v) + " is out of range");
  }
  if (threads_given && threads == 0) return UsageError("--threads 0: give at least 1 (or leave it out: two per core)");
  if (memory_given && !clairfs::ParseSize(memory, &o.memory)) {
    return UsageError("--memory wants a size such as 512M or 4G, got '" + memory + "'");
  }
  if (min_saving_pct < 0 || min_saving_pct >= 100) {
    return UsageError("--min-saving must be a percentage in [0, 100)");
  }
  auto level = clairfs::pack::ParseCompression(compress);
  if (!level.ok()) return UsageError(level.status().message());
  auto external = clairfs::pack::ParseExternalLinks(links);
  if (!external.ok()) return UsageError(external.status().message());
  o.external_links = *external;
  o.partitions = static_cast<uint32_t>(partitions);
  o.replicas = static_cast<uint32_t>(replicas);
  o.threads = static_cast<unsigned>(threads);
  o.frame_size = static_cast<uint32_t>(frame);
  o.min_saving = min_saving_pct / 100;
  o.zstd_level = *level;
  o.progress = true;
  if (auto st = clairfs::pack::ValidatePackOptions(o); !st.ok()) return UsageError(st.message());

  auto r = clairfs::pack::Pack(o);
  if (!r.ok()) return Fail(r.status());
  for (const std::string& w : r->warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
  const auto& s = *r;
  using clairfs::pack::HumanBytes;
  std::printf(
      "packed %lu files, %lu directories (%lu broadcast) from %s into %s: %s -> %s (%.2fx), "
      "%u partitions, %.1f s, %s/s\n",
      s.files, s.directories, s.broadcast_files, o.src.c_str(), o.out.c_str(),
      HumanBytes(s.raw_bytes).c_str(), HumanBytes(s.stored_bytes).c_str(),
      s.stored_bytes ? static_cast<double>(s.raw_bytes) / s.stored_bytes : 1.0, o.partitions,
      s.seconds, HumanBytes(s.seconds > 0 ? s.raw_bytes / s.seconds : 0).c_str());
  return 0;
}

int RunVerify(Args& a) {
  clairfs::pack::VerifyOptions o;
  uint64_t threads = 0;
  std::string links = "refuse";
  const bool threads_given = a.Value("--threads", &threads);
  a.Value("--external-links", &links);
  if (!a.Positionals(2, &o.out, &o.src)) return UsageError(a.error());
  if (!a.error().empty()) return UsageError(a.error());
  if (threads_given && (threads == 0 || threads > clairfs::pack::kMaxThreads)) {
    return UsageError("--threads " + std::to_string(threads) + " is out of range (1.." +
                      std::to_string(clairfs::pack::kMaxThreads) + ")");
  }
  auto external = clairfs::pack::ParseExternalLinks(links);
  if (!external.ok()) return UsageError(external.status().message());
  o.external_links = *external;
  o.threads = static_cast<unsigned>(threads);
  o.progress = true;
  auto r = clairfs::pack::Verify(o);
  if (!r.ok()) return Fail(r.status());
  for (const std::string& d : r->differences) std::printf("DIFF %s\n", d.c_str());
  std::printf("verified %lu files (%s) of %s against %s in %.1f s: %s\n", r->files,
              clairfs::pack::HumanBytes(r->bytes).c_str(), o.out.c_str(), o.src.c_str(),
              r->seconds,
              r->differences.empty()
                  ? "identical"
                  : (std::to_string(r->differences.size()) + " differences").c_str());
  return r->differences.empty() ? 0 : 1;
}

int RunInspect(Args& a) {
  std::string out;
  const bool json = a.Flag("--json");
  if (!a.Positionals(1, &out)) return UsageError(a.error());
  if (!a.error().empty()) return UsageError(a.error());
  auto m = clairfs::format::Manifest::Load(out);
  if (!m.ok()) return Fail(m.status());
  std::fputs(clairfs::pack::InspectReport(**m, out, json).c_str(), stdout);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // A fixed threshold: buffers of 1 MiB and more are mapped and unmapped on
  // their own. glibc's default raises the threshold after each large free and
  // then keeps such buffers in every thread's heap, so the memory of files
  // packed one after another by different threads would add up past --memory.
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
  if (argc < 2) return UsageError("no command given");
  const std::string cmd = argv[1];
  if (cmd == "-h" || cmd == "--help" || cmd == "help") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  Args args(argc - 2, argv + 2);
  if (cmd == "pack") return RunPack(args);
  if (cmd == "verify") return RunVerify(args);
  if (cmd == "inspect") return RunInspect(args);
  return UsageError("unknown command '" + cmd + "'");
}
