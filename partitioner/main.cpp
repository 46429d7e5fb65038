// clairfs-partition: packs a dataset directory for clairfs, verifies a pack
// against its source, and reports what a pack holds.
#include <malloc.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "base/cli.hpp"
#include "base/size.hpp"
#include "partitioner/format/manifest.hpp"
#include "partitioner/pack/inspect.hpp"
#include "partitioner/pack/packer.hpp"
#include "partitioner/pack/progress.hpp"
#include "partitioner/pack/verify.hpp"

namespace {

using clairfs::cli::AddU64;

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
  return clairfs::cli::UsageError("clairfs-partition", msg);
}

int Fail(const clairfs::Status& st) {
  std::fprintf(stderr, "clairfs-partition: %s\n", st.ToString().c_str());
  return 1;
}

// Each command's options, bound by main's parser and checked by its Run.
struct PackArgs {
  clairfs::pack::PackOptions o;
  std::string compress = "zstd";
  uint64_t partitions = 0, replicas = 1, threads = 0, frame = o.frame_size;
  double min_saving_pct = o.min_saving * 100;
  std::string memory;
  std::string links = "refuse";
  CLI::Option* threads_given = nullptr;
  CLI::Option* memory_given = nullptr;

  void AddTo(CLI::App& app) {
    app.add_option("SRC", o.src)->required();
    app.add_option("OUT", o.out)->required();
    AddU64(app, "--partitions", &partitions);
    AddU64(app, "--replicas", &replicas);
    app.add_option("--compress", compress);
    app.add_option("--placement", o.placement);
    app.add_option("--broadcast", o.broadcast)->allow_extra_args(false);
    threads_given = AddU64(app, "--threads", &threads);
    AddU64(app, "--frame-size", &frame);
    app.add_option("--min-saving", min_saving_pct);
    memory_given = app.add_option("--memory", memory);
    app.add_flag("--force", o.force);
    app.add_option("--external-links", links);
  }
};

struct VerifyArgs {
  clairfs::pack::VerifyOptions o;
  uint64_t threads = 0;
  std::string links = "refuse";
  CLI::Option* threads_given = nullptr;

  void AddTo(CLI::App& app) {
    app.add_option("OUT", o.out)->required();
    app.add_option("SRC", o.src)->required();
    threads_given = AddU64(app, "--threads", &threads);
    app.add_option("--external-links", links);
  }
};

struct InspectArgs {
  std::string out;
  bool json = false;

  void AddTo(CLI::App& app) {
    app.add_option("OUT", out)->required();
    app.add_flag("--json", json);
  }
};

int RunPack(PackArgs& a) {
  clairfs::pack::PackOptions& o = a.o;
  if (a.partitions == 0) return UsageError("--partitions P is required (P >= 1)");
  for (auto [name, v] : {std::pair{"--partitions", a.partitions},
                         {"--replicas", a.replicas},
                         {"--frame-size", a.frame},
                         {"--threads", a.threads}}) {
    if (v > UINT32_MAX)
      return UsageError(std::string(name) + " " + std::to_string(v) + " is out of range");
  }
  if (*a.threads_given && a.threads == 0)
    return UsageError("--threads 0: give at least 1 (or leave it out: two per core)");
  if (*a.memory_given && !clairfs::ParseSize(a.memory, &o.memory)) {
    return UsageError("--memory wants a size such as 512M or 4G, got '" + a.memory + "'");
  }
  if (a.min_saving_pct < 0 || a.min_saving_pct >= 100) {
    return UsageError("--min-saving must be a percentage in [0, 100)");
  }
  auto level = clairfs::pack::ParseCompression(a.compress);
  if (!level.ok()) return UsageError(level.status().message());
  auto external = clairfs::pack::ParseExternalLinks(a.links);
  if (!external.ok()) return UsageError(external.status().message());
  o.external_links = *external;
  o.partitions = static_cast<uint32_t>(a.partitions);
  o.replicas = static_cast<uint32_t>(a.replicas);
  o.threads = static_cast<unsigned>(a.threads);
  o.frame_size = static_cast<uint32_t>(a.frame);
  o.min_saving = a.min_saving_pct / 100;
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

int RunVerify(VerifyArgs& a) {
  clairfs::pack::VerifyOptions& o = a.o;
  if (*a.threads_given && (a.threads == 0 || a.threads > clairfs::pack::kMaxThreads)) {
    return UsageError("--threads " + std::to_string(a.threads) + " is out of range (1.." +
                      std::to_string(clairfs::pack::kMaxThreads) + ")");
  }
  auto external = clairfs::pack::ParseExternalLinks(a.links);
  if (!external.ok()) return UsageError(external.status().message());
  o.external_links = *external;
  o.threads = static_cast<unsigned>(a.threads);
  o.progress = true;
  auto r = clairfs::pack::Verify(o);
  if (!r.ok()) return Fail(r.status());
  for (const std::string& d : r->differences) std::printf("DIFF %s\n", d.c_str());
  std::printf("verified %lu files (%s) of %s against %s in %.1f s: %s\n", r->files,
              clairfs::pack::HumanBytes(r->bytes).c_str(), o.out.c_str(), o.src.c_str(), r->seconds,
              r->differences.empty()
                  ? "identical"
                  : (std::to_string(r->differences.size()) + " differences").c_str());
  return r->differences.empty() ? 0 : 1;
}

int RunInspect(const InspectArgs& a) {
  const std::string& out = a.out;
  const bool json = a.json;
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
  CLI::App app("clairfs-partition", "clairfs-partition");
  PackArgs pack;
  VerifyArgs verify;
  InspectArgs inspect;
  CLI::App* pack_cmd = app.add_subcommand("pack");
  CLI::App* verify_cmd = app.add_subcommand("verify");
  CLI::App* inspect_cmd = app.add_subcommand("inspect");
  CLI::App* help_cmd = app.add_subcommand("help");
  pack.AddTo(*pack_cmd);
  verify.AddTo(*verify_cmd);
  inspect.AddTo(*inspect_cmd);
  app.require_subcommand(0, 1);
  if (auto done = clairfs::cli::ParseMain(app, argc, argv, "clairfs-partition", kUsage)) {
    return *done;
  }
  if (*help_cmd) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (*pack_cmd) return RunPack(pack);
  if (*verify_cmd) return RunVerify(verify);
  if (*inspect_cmd) return RunInspect(inspect);
  return UsageError("no command given");
}
