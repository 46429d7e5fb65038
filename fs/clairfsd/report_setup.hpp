// ReportedPrefetch: turns the orders the job's processes report
// (fs/report, docs/report.md) into the planner the prefetch engine runs.
//
// Each main process of the job that reports (a training rank) becomes one
// slot of the planner; epoch e of a slot is the e-th segment (one loader
// epoch: a train pass, a validation pass) its process reported: the
// processes run the same loops, so their e-th segments are one epoch. A planner is made (and handed
// to the engine, replacing the one running) when a segment completes and the reporting processes
// are not the ones the running planner follows: the first report, the node's other ranks reporting,
// a restarted rank. Every other completed segment lets the running planner extend at once, before
// the epoch's first file is opened.
//
// The loader's shape (batch size, workers, read-ahead: LOADER frames) sets
// how far out of order opens may come: the widest of the node's loaders;
// generous defaults stand in when a reporter did not send it.
//
// Thread-safety: OnSegment may be called from any thread; calls are
// serialised. The orders, the engine slot and the manifest must outlive it.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "base/mutex.hpp"
#include "fs/dist/stager.hpp"
#include "fs/engine/prefetch_engine.hpp"
#include "fs/report/reported_orders.hpp"
#include "fs/vfs/open_observer.hpp"
#include "partitioner/format/manifest.hpp"
#include "prefetch/planner/planner_config.hpp"

namespace clairfs::fs {

// The prefetch engine, there from the start (a configured sampler) or made
// when the first report needs it: until then the RAM cache keeps its own LRU
// policy, as without prefetching. It forwards the daemon's opens, listings,
// read waits and forgotten inodes to the engine once there is one.
//
// Thread-safety: Start (at mount) and Reset (after the report server
// stopped) on the main thread; GetOrMake on the report thread; the observer
// calls and get() from any thread.
class EngineSlot final : public OpenObserver {
 public:
  using Factory = std::function<std::unique_ptr<PrefetchEngine>()>;
  // `engine` may be null: `make` makes one on the first GetOrMake.
  EngineSlot(std::unique_ptr<PrefetchEngine> engine, Factory make);
  ~EngineSlot() override { Reset(); }

  // The engine, or null while none was needed.
  PrefetchEngine* get() const { return live_.load(std::memory_order_acquire); }
  // Starts the engine if there is one (the mount is up); one made later
  // starts when made.
  void Start();
  // The engine, made (and started, if Start was called) if there was none.
  PrefetchEngine* GetOrMake();
  // Stops and destroys the engine (it hands the RAM cache back).
  void Reset();

  void OnOpen(uint32_t node) override;
  void OnListed(uint32_t first, uint32_t end) override;
  void OnReadWait(uint32_t node, uint64_t ns) override;
  void OnForget(uint32_t node) override;
  // An open seen by the OpenWatcher.
  void OnOpenEvent(uint32_t node);

 private:
  std::unique_ptr<PrefetchEngine> engine_;
  std::atomic<PrefetchEngine*> live_{nullptr};
  const Factory make_;
  std::atomic<bool> started_{false};
};

// The model of a loader's reported sampler settings (a SETTINGS frame,
// docs/report.md): `sampler`, `root` (relative to the mount), `rank` and
// `world_size` (the job's shard of the order: 0 and 1 when absent), and the
// sampler's settings by their clairfs-order names, made into the same order
// a configured sampler gives (BuildPrefetchJob): the files of each epoch for
// that rank. InvalidArgument naming what is wrong.
Result<ReportedModel> ModelOfSettings(const format::Manifest& manifest,
                                      const std::map<std::string, std::string>& settings);

class ReportedPrefetch {
 public:
  // `budget`: the planner's RAM budget (ram_cache).
  ReportedPrefetch(const ReportedOrders* orders, EngineSlot* engine,
                   std::shared_ptr<const format::Manifest> manifest, uint64_t budget);

  // What the settings predict for a rank and epoch (manifest nodes in read
  // order), when a sampler is configured, and their dataset's files (by
  // node, 1 = predicted): each process's latest reported segment of those
  // files is checked against it, and the first disagreement logged once.
  using Prediction = std::function<Result<std::vector<uint32_t>>(uint64_t rank, uint64_t epoch)>;
  void CheckAgainst(Prediction predict, uint64_t start_epoch, std::vector<uint8_t> files)
      CLAIRFS_EXCLUDES(mu_);

  // A segment completed (ReportedOrders' listener).
  void OnSegment() CLAIRFS_EXCLUDES(mu_);

  // Called once per reporting process with when it first reads each file:
  // its position in the process's first segment (Cluster::ShareFirstUse:
  // staging in the order the job reads). Set it before the server starts.
  using FirstReadsFn = std::function<void(const std::vector<FileStep>&)>;
  void OnFirstReads(FirstReadsFn f) CLAIRFS_EXCLUDES(mu_);

  // The check against the settings: "" (no sampler configured, or nothing
  // comparable reported yet), "agree", or the first disagreement.
  std::string settings_check() const CLAIRFS_EXCLUDES(mu_);

  // A disabled planner over the manifest's files: the engine's planner until
  // the first report (a reactive cache within `budget`).
  static std::unique_ptr<prefetch::Planner> Reactive(const format::Manifest& manifest,
                                                     uint64_t budget);
  // By manifest node: 1 for every file (any file may be reported).
  static std::vector<uint8_t> AllFiles(const format::Manifest& manifest);

 private:
  const ReportedOrders* const orders_;
  EngineSlot* const engine_;
  const std::shared_ptr<const format::Manifest> manifest_;
  const uint64_t budget_;

  // Compares the latest segment of each of `pids` with the prediction.
  void Check(const std::vector<uint64_t>& pids) CLAIRFS_REQUIRES(mu_);

  mutable Mutex mu_;
  std::vector<uint64_t> pids_ CLAIRFS_GUARDED_BY(mu_);  // the running planner's slots
  Prediction predict_ CLAIRFS_GUARDED_BY(mu_);
  uint64_t predict_start_ CLAIRFS_GUARDED_BY(mu_) = 0;
  std::vector<uint8_t> predict_files_ CLAIRFS_GUARDED_BY(mu_);
  std::string check_ CLAIRFS_GUARDED_BY(mu_);
  FirstReadsFn first_reads_ CLAIRFS_GUARDED_BY(mu_);
  std::set<uint64_t> first_read_ CLAIRFS_GUARDED_BY(mu_);  // processes whose first reads went
  // Hands each new process's first segment to first_reads_.
  void ShareFirstReads(const std::vector<uint64_t>& pids) CLAIRFS_REQUIRES(mu_);
};

}  // namespace clairfs::fs
