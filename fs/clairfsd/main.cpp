// clairfsd: serves a clairfs-partition output as a read-only FUSE mount on
// this node. A thin main: configuration, wiring of the core, FUSE session.
// Exit status: 0 after a clean unmount, 1 on a runtime error, 2 on bad usage.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/cli.hpp"
#include "base/json.hpp"
#include "base/log.hpp"
#include "fs/cache/cache_policy.hpp"
#include "fs/cache/ram_cache.hpp"
#include "fs/clairfsd/area_peers.hpp"
#include "fs/clairfsd/prefetch_setup.hpp"
#include "fs/clairfsd/report_setup.hpp"
#include "fs/clairfsd/settings_diagnosis.hpp"
#include "fs/config/config_loader.hpp"
#include "fs/dist/cluster.hpp"
#include "fs/dist/path_template.hpp"
#include "fs/engine/open_watcher.hpp"
#include "fs/engine/prefetch_engine.hpp"
#include "fs/fuse/fuse_adapter.hpp"
#include "fs/fuse/mount_tuning.hpp"
#include "fs/report/report_server.hpp"
#include "fs/report/reported_orders.hpp"
#include "fs/stats/cpu_stats.hpp"
#include "fs/stats/stats.hpp"
#include "fs/store/pack_readahead.hpp"
#include "fs/store/payload_source.hpp"
#include "fs/vfs/vfs.hpp"
#include "partitioner/format/manifest.hpp"
#include "prefetch/options/sampler_settings.hpp"

namespace fs = clairfs::fs;

namespace {

void LogLines(const std::string& prefix, const std::string& text) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    clairfs::Log(clairfs::LogLevel::kInfo, prefix + text.substr(pos, nl - pos));
    pos = nl + 1;
  }
}

// Expands {rank}, {host} and environment variables in one path setting and
// makes it absolute and free of trailing slashes.
clairfs::Status ExpandSetting(const char* name, std::string* path, const fs::Cluster& cluster) {
  if (path->empty()) return clairfs::Status::Ok();
  auto expanded = fs::ExpandPath(*path, cluster.rank(), cluster.host());
  if (!expanded.ok()) {
    return clairfs::Status::InvalidArgument(std::string(name) + ": " + expanded.status().message());
  }
  std::error_code ec;
  *path = std::filesystem::absolute(*expanded, ec).lexically_normal().string();
  while (path->size() > 1 && path->back() == '/') path->pop_back();
  return clairfs::Status::Ok();
}

void PrintConfigErrors(const std::string& msg) {
  std::string lines = "configuration errors:";
  size_t pos = 0;
  while (pos <= msg.size()) {
    size_t nl = msg.find('\n', pos);
    if (nl == std::string::npos) nl = msg.size();
    lines += "\n  " + msg.substr(pos, nl - pos);
    pos = nl + 1;
  }
  clairfs::cli::UsageError("clairfsd", lines);
}

}  // namespace

int main(int argc, char** argv) {
  fs::ReserveAutoUnmountSlot();
  // Joining the MPI job (if launched by one) comes first: MPI_Init owns argv.
  // It waits for every rank, so start_timeout_ms bounds it as it bounds the
  // start-up gates (read here from a copy of the arguments; errors in them
  // are reported below, through the gates).
  auto early = fs::LoadCommandLine(std::vector<std::string>(argv + 1, argv + argc));
  const std::chrono::milliseconds init_wait(early.ok() ? early->config.cluster.start_timeout
                                                       : fs::ClusterOptions{}.start_timeout);
  auto joined = fs::Cluster::Join(&argc, &argv, init_wait);
  if (!joined.ok()) {
    clairfs::Log(clairfs::LogLevel::kError, joined.status().ToString());
    return 1;
  }
  fs::Cluster& cluster = **joined;
  if (cluster.size() > 1) clairfs::SetLogPrefix("clairfsd[" + std::to_string(cluster.rank()) + "]");

  // Until every rank has passed the last start-up gate, a rank that fails
  // still takes part in each gate (Cluster::Agree), so the job stops as one.
  const auto gate_wait = fs::ClusterOptions{}.start_timeout;
  auto cl = fs::LoadCommandLine(std::vector<std::string>(argv + 1, argv + argc));
  if (!cl.ok()) {
    PrintConfigErrors(cl.status().message());
    (void)cluster.Agree(cl.status(), gate_wait);
    return 2;
  }
  if (cl->help) {
    std::fputs(fs::Usage().c_str(), stdout);
    std::fputs(
        "The sampler's own settings, keys of the YAML config too (clairfs-order --help\n"
        "has them as its options, in detail):\n",
        stdout);
    // prefetch_sampler, prefetch_world_size and prefetch_batch_size are listed above.
    std::fputs(clairfs::prefetch::SamplerSettingsHelp(clairfs::prefetch::SettingNames::kKeys,
                                                      {"sampler", "world-size", "batch-size"})
                   .c_str(),
               stdout);
    return 0;
  }
  fs::Config& config = cl->config;
  const auto start_wait = config.cluster.start_timeout;
  if (config.prefetch_sampler != "none") {
    // The sampler's settings, through the table clairfs-order reads too: a malformed one
    // is a configuration error like any other.
    if (auto spec = fs::OrderSpecFromConfig(config); !spec.ok()) {
      PrintConfigErrors(spec.status().message());
      (void)cluster.Agree(spec.status(), start_wait);
      return 2;
    }
  }
  // A local problem found before the first gate: said here, agreed on, exit 2.
  auto refuse = [&](const clairfs::Status& st) {
    clairfs::Log(clairfs::LogLevel::kError, st.message());
    (void)cluster.Agree(st, start_wait);
    return 2;
  };
  for (auto [name, path] : {std::pair{"dataset", &config.cluster.dataset},
                            {"mount", &config.fuse.mount},
                            {"local_dir", &config.cluster.local_dir},
                            {"writes_local", &config.writes.local},
                            {"writes_persist", &config.writes.persist}}) {
    clairfs::Status st = ExpandSetting(name, path, cluster);
    if (!st.ok()) return refuse(st);
  }
  clairfs::SetLogLevel(config.log_level);
  const bool prefetch = config.prefetch_sampler != "none";
  const bool declines_opens = config.vfs.decline_open;  // as configured (no_open)
  if (prefetch && config.vfs.decline_open) {
    // The prefetcher tracks the ranks from their opens: until an OpenWatcher
    // reports them (prefetch_opens: inotify), every OPEN must reach the daemon.
    config.vfs.decline_open = false;
    clairfs::Log(clairfs::LogLevel::kInfo,
                 "prefetch_sampler " + config.prefetch_sampler +
                     (config.prefetch_opens == "inotify"
                          ? ": opens reach the daemon until the inotify watches are in place"
                          : ": no_open forced to false so that opens reach the daemon"));
  }
  const std::string effective = fs::DescribeConfig(config);
  LogLines("config: ", effective);

  // Each node checks the shared paths itself: a file system not mounted on one
  // node is that node's problem to name.
  std::error_code ec;
  const std::string& dataset = config.cluster.dataset;
  if (!std::filesystem::is_directory(dataset, ec)) {
    const bool exists = std::filesystem::exists(dataset, ec);
    return refuse(clairfs::Status::InvalidArgument(
        "dataset: " + dataset +
        (exists ? " is not a directory (give the clairfs-partition output directory, which holds "
                  "the manifest and the part-* packs)"
                : " does not exist on host " + cluster.host() +
                      " (is the shared file system mounted on every node?)")));
  }
  bool detached_stale = false;
  if (clairfs::Status st = fs::PrepareMountPoint(config.fuse.mount, &detached_stale); !st.ok()) {
    return refuse(st);
  }
  if (detached_stale) {
    clairfs::Log(clairfs::LogLevel::kWarn,
                 "mount point " + config.fuse.mount +
                     ": detached the dead mount of an earlier clairfsd (its "
                     "daemon was gone)");
  }
  if (clairfs::Status ready = cluster.Agree(clairfs::Status::Ok(), start_wait); !ready.ok()) {
    clairfs::Log(clairfs::LogLevel::kError, ready.message());
    return 1;
  }
  // The first epoch's reads, worked out once at Start: each partition homed
  // on the node that reads it first (rank 0 decides), each rank's packs
  // staged in the order the job first reads their bytes.
  std::optional<clairfs::Result<clairfs::prefetch::FirstReads>> first_reads;
  const auto first_reads_of = [&](const clairfs::format::Manifest& m, int ranks) {
    if (!first_reads) first_reads = fs::FirstReaders(config, m, ranks);
    return *first_reads;
  };
  if (prefetch && cluster.size() > 1) {
    config.cluster.place = [&](const clairfs::format::Manifest& m, int ranks) {
      auto first = first_reads_of(m, ranks);
      if (!first.ok()) {
        clairfs::Log(clairfs::LogLevel::kInfo,
                     "placement: partition p on rank p mod N (the first reads are not known: " +
                         first.status().message() + ")");
        return fs::Placement{};
      }
      return fs::PlaceByReader(m, ranks, first->node);
    };
  }
  if (prefetch) {
    config.cluster.first_use = [&](const clairfs::format::Manifest& m, int ranks) {
      auto first = first_reads_of(m, ranks);
      return first.ok() ? first->step : std::vector<uint64_t>{};
    };
  }
  clairfs::Status started = cluster.Start(config.cluster);
  if (!started.ok()) {
    clairfs::Log(clairfs::LogLevel::kError, started.ToString());
    (void)cluster.Agree(started, start_wait);
    return 1;
  }
  const auto manifest = cluster.manifest();
  const auto& m = *manifest;
  if (m.Lookup(0, fs::ControlFiles::kDirName)) {
    clairfs::Log(clairfs::LogLevel::kWarn, std::string("the dataset has its own /") +
                                               fs::ControlFiles::kDirName +
                                               "; the control directory hides it");
  }
  clairfs::Log(clairfs::LogLevel::kInfo,
               "dataset: " + std::to_string(m.header().file_count) + " files, " +
                   std::to_string(m.node_count() - m.header().file_count) + " directories, " +
                   std::to_string(m.header().raw_bytes) + " bytes in " +
                   std::to_string(m.partition_count()) + " partitions; manifest " +
                   std::to_string(m.memory_bytes()) + " bytes in RAM");

  // The writable area: what persist holds is read (and what the last run
  // left in local queued) before the mount is served.
  std::unique_ptr<fs::WriteArea> writes;
  std::unique_ptr<fs::ClusterAreaPeers> area_peers;
  if (!config.writes.name.empty()) {
    clairfs::Status st;
    if (m.Lookup(0, config.writes.name)) {
      st = clairfs::Status::InvalidArgument("writes_dir: the dataset has its own /" +
                                            config.writes.name + "; give the area another name");
    } else {
      fs::WriteAreaOptions area = config.writes;
      area.uid = static_cast<uint32_t>(::getuid());
      area.gid = static_cast<uint32_t>(::getgid());
      auto opened = fs::WriteArea::Open(std::move(area), fs::Vfs::FirstFreeIno(m));
      if (opened.ok()) {
        writes = std::move(opened).value();
      } else {
        st = opened.status();
      }
    }
    if (!st.ok()) {
      clairfs::Log(clairfs::LogLevel::kError, st.message());
      (void)cluster.Agree(st, start_wait);
      return 1;
    }
    // Files written on one node are read on the others from it.
    fs::ConnectArea(cluster, writes.get(), config.cluster.store.peer_timeout, &area_peers);
    clairfs::Log(clairfs::LogLevel::kInfo, "writes: /" + config.writes.name +
                                               " is writable: " + config.writes.local +
                                               " first, drained to " + config.writes.persist);
    config.fuse.writable = true;
  }

  fs::Stats stats;
  fs::PackPayloadSource source(manifest, cluster.store(), fs::PackPayloadSource::kTableCacheBytes,
                               config.frames_ahead);
  fs::RamCache cache(config.ram_cache, std::make_unique<fs::LruPolicy>());
  fs::VfsOptions& options = config.vfs;  // decline_open: false when prefetching (see above)
  options.uid = static_cast<uint32_t>(::getuid());
  options.gid = static_cast<uint32_t>(::getgid());
  options.config_text = effective;
  options.stats_sections.emplace_back(
      "cluster", [&cluster](clairfs::JsonWriter& w) { cluster.WriteStats(w); });
  options.stats_sections.emplace_back("cpu", fs::WriteCpuStats);
  if (writes) {
    options.writes = writes.get();
    options.stats_sections.emplace_back(
        "writes", [&writes](clairfs::JsonWriter& w) { writes->WriteStats(w); });
  }
  options.stats_sections.emplace_back("frames_ahead", [&source, &config](clairfs::JsonWriter& w) {
    w.Integer("frames", config.frames_ahead)
        .Integer("hints", source.ahead_hints())
        .Integer("bytes", source.ahead_bytes());
  });
  // The engine (its threads) must go before the cache it owns, the pusher it
  // uses and the ReadOrder its planner's order source references: it is reset
  // explicitly once unmounted (below), and declared after them as well.
  std::shared_ptr<const clairfs::prefetch::ReadOrder> order;
  fs::FusePageCachePusher pusher;
  std::unique_ptr<fs::PrefetchEngine> engine;
  // Opens seen through inotify cost the training job no round trip; once the
  // watches are in place the mount declines opens. Declared after the engine
  // it reports to, so it stops first.
  std::unique_ptr<fs::OpenWatcher> watcher;
  std::atomic<const fs::OpenWatcher*> live_watcher{nullptr};  // for stats.json
  // Settings that do not fit the dataset on the mount (files missing, other
  // classes, an unreadable order file) cost the job its predictions, never a
  // read: said once in the log and stats.json, and the daemon serves reactively.
  clairfs::Status prefetch_error;
  std::optional<fs::PrefetchJob> job;
  std::unique_ptr<clairfs::prefetch::Planner> planner;
  if (prefetch) {
    auto built = fs::BuildPrefetchJob(config, m, static_cast<uint64_t>(cluster.rank()),
                                      static_cast<uint64_t>(cluster.size()));
    auto created =
        built.ok() ? clairfs::prefetch::Planner::Create(built->config, built->input,
                                                        clairfs::SteadyClock::Instance())
                   : clairfs::Result<std::unique_ptr<clairfs::prefetch::Planner>>(built.status());
    if (created.ok()) {
      job.emplace(std::move(*built));
      planner = std::move(*created);
    } else {
      prefetch_error = created.status();
    }
  }
  if (!prefetch_error.ok()) {
    clairfs::Log(clairfs::LogLevel::kWarn,
                 "prefetch: the settings do not fit the dataset, so nothing is "
                 "predicted and every file is read on demand: " +
                     prefetch_error.ToString());
  }
  if (planner) {
    fs::LogPrefetchJob(config, *job, planner->batch_mode());
    fs::PrefetchEngineOptions eo = config.prefetch_engine;
    eo.sampler = config.prefetch_sampler;
    // Lost in the first epoch: which setting most likely differs, said once.
    eo.diagnose =
        fs::SettingsDiagnoser(config, manifest, job->node, static_cast<uint64_t>(cluster.size()));
    engine = std::make_unique<fs::PrefetchEngine>(std::move(planner), std::move(job->in_dataset),
                                                  manifest, &source, &cache, &stats, &pusher, eo);
    order = job->order;
  }
  // The job's own report of its orders (docs/report.md): a channel the
  // daemon owns, named in MOUNT/.clairfs/report.
  fs::ReportLimits report_limits;
  fs::ReportedOrders report_orders(manifest, report_limits);
  fs::ReportServer report_server(&report_orders, report_limits);
  // Without a sampler the engine is made by the first report: until then
  // the RAM cache keeps its own LRU policy, as without prefetching.
  fs::EngineSlot engines(std::move(engine), [&] {
    fs::PrefetchEngineOptions eo = config.prefetch_engine;
    eo.sampler = "none";
    if (!prefetch_error.ok()) eo.reason = prefetch_error.ToString();
    return std::make_unique<fs::PrefetchEngine>(
        fs::ReportedPrefetch::Reactive(*manifest, config.ram_cache),
        fs::ReportedPrefetch::AllFiles(*manifest), manifest, &source, &cache, &stats, &pusher, eo);
  });
  std::unique_ptr<fs::ReportedPrefetch> reported;
  if (config.report) {
    reported = std::make_unique<fs::ReportedPrefetch>(&report_orders, &engines, manifest,
                                                      config.ram_cache);
    if (job && engines.get()) {
      reported->CheckAgainst(fs::PredictedFiles(*job), config.prefetch_start_epoch,
                             engines.get()->in_dataset());
    }
    report_orders.SetListener([r = reported.get()] { r->OnSegment(); });
    // Staging follows the job's first reads as its ranks report them.
    reported->OnFirstReads([&cluster](const auto& files) { cluster.ShareFirstUse(files); });
    // A loader reported by its settings (SETTINGS): the sampler models make its epochs.
    report_orders.SetModelMaker([manifest](const std::map<std::string, std::string>& settings) {
      return fs::ModelOfSettings(*manifest, settings);
    });
    // Listening now names the channel for the control file; the thread that
    // serves it starts with the mount.
    clairfs::Status listening = report_server.Listen();
    if (listening.ok()) {
      options.report_text = "clairfs-report 1\nsocket " + report_server.name() + "\n";
    } else {
      clairfs::Log(clairfs::LogLevel::kWarn,
                   "report: no channel for the job's orders: " + listening.ToString());
    }
    options.stats_sections.emplace_back(
        "report", [&report_orders, r = reported.get()](clairfs::JsonWriter& w) {
          report_orders.WriteStats(w);
          w.String("settings_check", r->settings_check());
        });
  }
  // The engine's opens: the dataset's files under a sampler, any file for reports.
  const std::vector<uint8_t> watched =
      engines.get() ? engines.get()->in_dataset() : fs::ReportedPrefetch::AllFiles(*manifest);
  const bool observed = engines.get() != nullptr || !options.report_text.empty();
  if (observed || !prefetch_error.ok()) {
    // Before a report (or with settings that do not fit): nothing predicted.
    options.stats_sections.emplace_back(
        "prefetch", [&engines, reason = prefetch_error.ok()
                                            ? std::string()
                                            : prefetch_error.ToString()](clairfs::JsonWriter& w) {
          if (const fs::PrefetchEngine* e = engines.get()) {
            e->WriteStats(w);
            return;
          }
          w.Bool("enabled", false);
          if (!reason.empty()) w.String("reason", reason);
        });
  }
  if (!observed && options.decline_open != declines_opens) {
    // Nothing left to see the opens (the settings did not fit, and no report
    // channel): they need not reach the daemon.
    options.decline_open = declines_opens;
    clairfs::Log(clairfs::LogLevel::kInfo,
                 "prefetch off: the mount declines opens again (no_open: true)");
  }
  if (observed) {
    options.stats_sections.emplace_back("open_watcher", [&live_watcher](clairfs::JsonWriter& w) {
      const fs::OpenWatcher* on = live_watcher.load();
      w.String("opens_seen_through", on ? "inotify" : "fuse")
          .Integer("watches", on ? on->watches() : 0)
          .Integer("events", on ? on->events() : 0)
          .Integer("overflows", on ? on->overflows() : 0);
    });
    options.open_observer = &engines;
  }
  fs::Vfs vfs(manifest, &source, &cache, &stats, options);
  // The last gate: every rank is set up; from here each serves on its own.
  clairfs::Status ready = cluster.Agree(clairfs::Status::Ok(), start_wait);
  if (!ready.ok()) {
    clairfs::Log(clairfs::LogLevel::kError, ready.message());
    return 1;
  }
  // Serving peers, staging and prefetching start once the mount is up (see
  // ServeFuse: no thread of ours may run while the mount forks fusermount3).
  auto start = [&]() -> clairfs::Status {
    CLAIRFS_RETURN_IF_ERROR(cluster.Serve());
    if (writes) writes->Start();
    engines.Start();
    if (!report_server.name().empty()) CLAIRFS_RETURN_IF_ERROR(report_server.Start());
    return clairfs::Status::Ok();
  };

  std::function<void()> on_mounted;
  // Without a sampler nothing forced no_open off: with no_open false the
  // opens reach the daemon anyway, and need no watch.
  if (observed && config.prefetch_opens == "inotify" && (prefetch || config.vfs.decline_open)) {
    on_mounted = [&] {
      auto w = fs::OpenWatcher::Start(config.fuse.mount, manifest, watched,
                                      [&engines](uint32_t node) { engines.OnOpenEvent(node); });
      if (!w.ok()) {
        clairfs::Log(clairfs::LogLevel::kWarn,
                     "prefetch: opens keep reaching the daemon (a round trip "
                     "each): " +
                         w.status().ToString());
        return;
      }
      clairfs::Log(clairfs::LogLevel::kInfo, "prefetch: opens seen through inotify on " +
                                                 std::to_string((*w)->watches()) +
                                                 " directories; the mount declines opens");
      watcher = std::move(*w);
      live_watcher.store(watcher.get());
      vfs.DeclineOpens();
    };
  }
  config.fuse.dataset = dataset;  // the mount's source (fsname)
  clairfs::Status st = fs::ServeFuse(&vfs, config.fuse, &pusher, start, std::move(on_mounted));
  // Unmounted: the parts go in this order, whatever their declaration order.
  // Nothing reports opens any more, then nothing fetches, then the engine
  // hands the RAM cache back (it is the cache's owner until its destructor).
  live_watcher.store(nullptr);
  watcher.reset();
  report_server.Stop();
  engines.Reset();
  if (!st.ok()) clairfs::Log(clairfs::LogLevel::kError, st.ToString());
  // Unmounted: what was written reaches persist before the daemon ends.
  clairfs::Status drained;
  if (writes) drained = writes->Finish(config.writes_stall);
  if (!drained.ok()) clairfs::Log(clairfs::LogLevel::kError, drained.message());
  // Unmounted: wait for the other ranks, which may still read from this one.
  // Both steps are bounded (shutdown_wait_ms each), and SIGTERM is ignored
  // from the unmount on (ServeFuse), so a second one cannot cut them short.
  const auto wait = config.cluster.shutdown_wait;
  clairfs::Status down = cluster.Shutdown(wait);
  const int code = st.ok() && down.ok() && drained.ok() ? 0 : 1;
  cluster.Finalize(wait, code);
  return code;
}
