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
// The loader's shape (batch size, workers, read-ahead), which sets how far
// out of order opens may come, is not reported yet: generous defaults stand
// in (kBatch, kWorkers below).
//
// Thread-safety: OnSegment may be called from any thread; calls are
// serialised. The orders, the engine and the manifest must outlive it.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "base/mutex.hpp"
#include "fs/engine/prefetch_engine.hpp"
#include "fs/report/reported_orders.hpp"
#include "partitioner/format/manifest.hpp"
#include "prefetch/planner/planner_config.hpp"

namespace clairfs::fs {

class ReportedPrefetch {
 public:
  // `budget`: the planner's RAM budget (ram_cache).
  ReportedPrefetch(const ReportedOrders* orders, PrefetchEngine* engine,
                   std::shared_ptr<const format::Manifest> manifest, uint64_t budget);

  // A segment completed (ReportedOrders' listener).
  void OnSegment() CLAIRFS_EXCLUDES(mu_);

  // A disabled planner over the manifest's files: the engine's planner until
  // the first report (a reactive cache within `budget`).
  static std::unique_ptr<prefetch::Planner> Reactive(const format::Manifest& manifest,
                                                     uint64_t budget);
  // By manifest node: 1 for every file (any file may be reported).
  static std::vector<uint8_t> AllFiles(const format::Manifest& manifest);

 private:
  const ReportedOrders* const orders_;
  PrefetchEngine* const engine_;
  const std::shared_ptr<const format::Manifest> manifest_;
  const uint64_t budget_;

  Mutex mu_;
  std::vector<uint64_t> pids_ CLAIRFS_GUARDED_BY(mu_);  // the running planner's slots
};

}  // namespace clairfs::fs
