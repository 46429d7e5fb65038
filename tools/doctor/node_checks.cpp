// The node's limits against the job: inotify, local disk, memory.
#include <sys/statvfs.h>

#include <cerrno>
#include <cstring>

#include "fs/clairfsd/prefetch_setup.hpp"
#include "fs/dist/ownership.hpp"
#include "partitioner/format/pack_file.hpp"
#include "tools/doctor/doctor.hpp"
#include "tools/doctor/judge.hpp"

namespace clairfs::doctor {
namespace {

// Directories holding at least one file: what the open watcher watches when
// every file is observed (the order reporter's case; a sampler's prefetch
// root watches a subset).
uint64_t DirectoriesWithFiles(const format::Manifest& m) {
  uint64_t dirs = 0;
  for (uint32_t i = 0; i < m.node_count(); ++i) {
    if (!m.IsDirectory(i)) continue;
    for (uint32_t c = m.FirstChild(i), end = c + m.ChildCount(i); c < end; ++c) {
      if (!m.IsDirectory(c)) {
        ++dirs;
        break;
      }
    }
  }
  return dirs;
}

Result<uint64_t> ReadProcNumber(const std::string& path) {
  auto text = ReadText(path);
  if (!text.ok()) return text.status();
  return ParseProcNumber(*text, path);
}

// The partitions this rank stages and how they were placed, as clairfsd
// places them (fs/clairfsd/main.cpp: by first reader when a sampler predicts
// the reads of a job of several nodes, else p mod N).
std::vector<uint32_t> Partitions(const Context& ctx, std::string* how) {
  const format::Manifest& m = *ctx.manifest;
  const int nodes = static_cast<int>(ctx.nodes);
  std::vector<int> homes;
  *how = nodes == 1 ? "the one node holds every pack"
                    : "partition p on node p mod " + std::to_string(nodes);
  if (nodes > 1 && ctx.config.prefetch_sampler != "none") {
    auto first = fs::FirstReaders(ctx.config, m, nodes);
    if (first.ok()) {
      homes = fs::PlaceByReader(m, nodes, first->node).homes;
      *how = "placed by first reader (" + ctx.config.prefetch_sampler + ")";
    }
  }
  const fs::Ownership own(m.partition_count(), m.header().replicas, nodes, homes);
  return own.PartitionsOf(static_cast<int>(ctx.rank));
}

}  // namespace

Check CheckInotify(const Context& ctx) {
  if (ctx.config_refused) return Check::Skipped("inotify", "the config did not load");
  const fs::Config& c = ctx.config;
  if (c.prefetch_opens != "inotify") {
    return Check::Ok("inotify", "not used (prefetch_opens: " + c.prefetch_opens + ")");
  }
  if (c.prefetch_sampler == "none" && !(c.report && c.vfs.decline_open)) {
    return Check::Ok("inotify", "not used (no sampler, and opens reach the daemon)");
  }
  if (!ctx.manifest) return Check::Skipped("inotify", "no dataset: its directory count is unknown");
  const std::string base = ctx.options.proc + "/sys/fs/inotify/";
  auto watches = ReadProcNumber(base + "max_user_watches");
  auto queued = ReadProcNumber(base + "max_queued_events");
  for (const auto* r : {&watches, &queued}) {
    if (!r->ok()) {
      return Check::Problem("inotify", r->status().message(),
                            "ask your site's administrators why the inotify limits cannot be read "
                            "(is inotify enabled in the kernel?), or set prefetch_opens: fuse");
    }
  }
  return JudgeInotify(*watches, *queued, DirectoriesWithFiles(*ctx.manifest), ctx.options.proc);
}

Check CheckLocalSpace(const Context& ctx) {
  if (ctx.local_dir.empty()) {
    return Check::Skipped("local_space", "no --local-dir (nor local_dir in the config)");
  }
  if (!ctx.manifest) return Check::Skipped("local_space", "no readable dataset manifest");
  // The local dir is created at staging: ask the file system it will be on.
  std::string probe = ctx.local_dir;
  struct statvfs fs;
  while (::statvfs(probe.c_str(), &fs) != 0) {
    const int e = errno;
    const size_t slash = probe.find_last_of('/');
    if (e != ENOENT || probe == "/" || probe == ".") {
      return Check::Problem(
          "local_space", "cannot see the file system of " + ctx.local_dir + ": " + std::strerror(e),
          "choose a --local-dir on the node's local disk that you may write");
    }
    probe = slash == std::string::npos ? "." : slash == 0 ? "/" : probe.substr(0, slash);
  }
  std::string how;
  const std::vector<uint32_t> parts = Partitions(ctx, &how);
  std::vector<uint64_t> sizes;
  for (uint32_t p = 0; p <= ctx.manifest->partition_count(); ++p) {
    sizes.push_back(ctx.manifest->partition(p).pack_bytes);
  }
  uint32_t staged_count = 0;
  const uint64_t need = ShareBytes(sizes, parts, [&](uint32_t p) {
    const bool staged = format::OpenPack(ctx.local_dir, *ctx.manifest, p).ok();
    staged_count += staged;
    return staged;
  });
  const uint64_t free = static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize;
  const std::string numbers =
      "node " + std::to_string(ctx.rank) + " of " + std::to_string(ctx.nodes) + " (" +
      ctx.nodes_from + ") stages " + std::to_string(parts.size()) + " packs, " + how + ": " +
      HumanBytes(need) + " to copy" +
      (staged_count ? " (" + std::to_string(staged_count) + " already there)" : "") + ", " +
      HumanBytes(free) + " free in " + probe;
  if (free >= need) return Check::Ok("local_space", numbers);
  return Check::Problem("local_space", "not enough space: " + numbers,
                        "choose a --local-dir on a larger local disk (or free " +
                            HumanBytes(need - free) + " there), or run on more nodes (--nodes)");
}

Check CheckMemory(const Context& ctx) {
  if (ctx.config_refused)
    return Check::Skipped("memory", "the config did not load: ram_cache unknown");
  const std::string path = ctx.options.proc + "/meminfo";
  auto text = ReadText(path);
  if (!text.ok()) {
    return Check::Problem("memory", text.status().message(),
                          "ask your site's administrators why " + path + " cannot be read");
  }
  auto available = ParseMemAvailable(*text);
  if (!available.ok()) {
    return Check::Problem("memory", path + ": " + available.status().message(),
                          "ask your site's administrators (a kernel before 3.14 has no "
                          "MemAvailable)");
  }
  return JudgeMemory(*available, ctx.config.ram_cache,
                     ctx.manifest ? ctx.manifest->memory_bytes() : 0,
                     ctx.options.config.empty() ? "a config (--config)" : ctx.options.config);
}

}  // namespace clairfs::doctor
