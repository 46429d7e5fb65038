// PrefetchEngine: runs the Planner inside clairfsd. It sees every open of a
// dataset file (an OpenObserver hooked into Vfs::Open), and its fetch threads
// take the planner's NextFetches, load each file through a FileReader (so it
// lands verified in the RAM cache), push the bytes into the kernel's page
// cache (PageCachePusher: fuse_lowlevel_notify_store) and drop a file's
// blocks from the RAM cache when the planner evicts it.
//
// One owner of cached bytes: the engine is the RAM cache's FileOwner, so the
// planner decides which files the node keeps in RAM - what it fetched, and
// what a demand read loaded (Admit, then OnFetched, as the simulator does) -
// and the planner's budget is the cache's capacity (ram_cache). A kept file
// is in RAM once: in the kernel's page cache once pushed there (its blocks
// then leave the RAM cache: the job reads the kernel's copy, and a second one
// in the daemon would cost the node the RAM and the daemon the fresh pages),
// else in the RAM cache. A file pushed as the job opens it keeps its blocks
// too (the READs of that open may be under way). Nothing else holds file bytes beyond the replies
// in flight.
//
// Tiers: a pushed file is read at page-cache speed and never reaches the
// daemon; a push the kernel refuses (the inode is not known yet, ENOENT)
// leaves the RAM copy as the second tier; anything the planner does not keep
// is read from the packs on demand. With the planner lost or without
// predictions, Admit keeps demand-read files oldest-out-first. The kernel
// may drop a pushed file's pages (memory pressure): a READ then loads the
// file again and the RAM cache keeps it (Keep: the planner still counts it);
// when the kernel drops the file's inode (FORGET), its pages went with it and
// the planner is told the file is gone, so it fetches it again when due.
//
// An open of a file whose fetch is under way waits for it, at most
// options.open_wait (the FUSE worker never blocks without bound). Pushes the
// kernel refused are tried again when it learns the inodes: a fetch thread
// retries the kept files of a directory listing shortly after the listing
// (READDIRPLUS makes the inodes; a training framework lists its dataset
// before it reads it), and an open of a kept file not pushed yet pushes it
// before the open is answered.
//
// Idle fetch threads sleep options.idle_poll at most; an open wakes one only
// when the last plan stopped for want of room (an open may make some).
//
// Counters: the planner counts the opens, their readiness and its own
// decisions (evictions, admissions: prefetch::PlannerStats); the engine
// counts only what it does itself - where ready opens found their bytes, the
// waits, the fetches and the pushes (PrefetchStats). A fetch is not a READ
// request: the data path's Stats count the READs the kernel sends.
//
// The planner can be replaced while the engine runs (Replace: the job began
// to report its orders, or reported a new process): the RAM cache is emptied
// and the new planner starts from nothing; work a thread began under the old
// one finishes without touching the cache on its behalf. The counters of
// opens add up across planners.
//
// Thread-safety: thread-safe. Lock order: the cache's lock (Keep, Dropped),
// then the planner's, then mu_. mu_ is never held across a planner call, a
// cache call, a file read or a push. planner_mu_ is a leaf, held to copy the
// planner's pointer.
// The cache must outlive the engine; the engine is its owner from the
// constructor to the destructor. Start once, Stop (or the destructor) joins
// the threads.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "fs/cache/ram_cache.hpp"
#include "fs/stats/stats.hpp"
#include "fs/store/payload_source.hpp"
#include "fs/vfs/file_reader.hpp"
#include "fs/vfs/inode.hpp"
#include "fs/vfs/open_observer.hpp"
#include "partitioner/format/manifest.hpp"
#include "prefetch/planner/planner.hpp"

namespace clairfs::fs {

// A snapshot of the prefetcher's counters (PrefetchEngine::Snapshot). Value type.
struct PrefetchStats {
  prefetch::PlannerStats planner;  // opens, readiness, tracking, policy, budget
  // The engine's own counts. Ready opens by where their bytes were: pushed
  // into the kernel's page cache, or only in the RAM cache.
  uint64_t ready_in_page_cache = 0, ready_in_ram = 0;
  // Opens that waited for their file's fetch under way: count, total wait, time-outs.
  uint64_t waits = 0, wait_ns = 0, wait_timeouts = 0;
  // Fetches: files loaded and kept (and their bytes), loads that failed, and
  // files loaded but not kept (the room freed for them was not free yet).
  uint64_t fetched = 0, fetched_bytes = 0, fetch_failures = 0, not_kept = 0;
  // Page-cache pushes at fetch: files (and bytes) taken, refused for an
  // unknown inode, failed otherwise; refused ones pushed after a listing or at
  // the file's open.
  uint64_t pushes = 0, pushed_bytes = 0, push_unknown_inode = 0, push_errors = 0;
  uint64_t listed_pushes = 0, late_pushes = 0;
  // Kept files held in the page cache alone now (their blocks left the RAM
  // cache): files and bytes. Pushed files a READ loaded again (the kernel had
  // dropped pages of them), and whose inode the kernel dropped (FORGET).
  uint64_t held_files = 0, held_bytes = 0, reloaded = 0, forgotten = 0;
};

struct PrefetchEngineOptions {
  uint32_t threads = 2;  // fetch threads (config prefetch_threads)
  std::chrono::milliseconds open_wait{
      2000};                    // longest wait of an open for its fetch (prefetch_wait_ms)
  size_t fetches_per_plan = 4;  // files one thread takes from NextFetches at a time
  std::chrono::milliseconds idle_poll{20};  // a thread with nothing to do sleeps this long at most
  std::string sampler;                      // where the order comes from, for stats.json
  std::string reason;  // why the configured settings are not followed (stats.json), if so
  // Optional: called once, by a fetch thread, when the planner the engine
  // started with lost the job's order in its first epoch
  // (Planner::FirstEpochLoss), with the job's first opens; returns
  // stats.json's prefetch.likely_wrong ("" when nothing is named). Not
  // called once the planner was replaced (the job reports its order).
  std::function<std::string(const std::vector<prefetch::FileId>& opens)> diagnose;
  // Where time is read: how long an open waited, when a refused push is tried
  // again. Not owned; must outlive the engine.
  const clairfs::Clock* clock = &clairfs::SteadyClock::Instance();
};

class PrefetchEngine final : public OpenObserver, public FileOwner {
 public:
  // `in_dataset` (by manifest node, 1 = a dataset file) selects the opens the
  // planner is told of. The manifest, source, cache and stats must outlive
  // the engine; `pusher` may be null (RAM tier only) and must outlive Stop().
  PrefetchEngine(std::unique_ptr<prefetch::Planner> planner, std::vector<uint8_t> in_dataset,
                 std::shared_ptr<const format::Manifest> manifest, PayloadSource* source,
                 RamCache* cache, Stats* stats, PageCachePusher* pusher,
                 PrefetchEngineOptions options);
  ~PrefetchEngine() override;

  void Start();
  void Stop();

  // Hands the decisions to `planner` from now on; `sampler` names its order's
  // source in stats.json. Empties the RAM cache (its files were the old
  // planner's). Safe while running.
  // `loader_of` (optional) names the job's loader and its own epoch count
  // for a planner epoch (stats.json's per_epoch: the epochs as the job
  // counts them).
  using LoaderOf = std::function<std::optional<std::pair<uint64_t, uint64_t>>(uint64_t epoch)>;
  void Replace(std::unique_ptr<prefetch::Planner> planner, std::string sampler,
               LoaderOf loader_of = {});
  // Wakes the idle fetch threads: the planner may have work (an epoch's
  // order just arrived).
  void Wake() { work_cv_.NotifyAll(); }
  // The planner deciding now (kept alive by the pointer while in use).
  std::shared_ptr<prefetch::Planner> planner() const;

  void OnOpen(uint32_t node) override;
  // An open seen after the fact (OpenWatcher): as OnOpen, but the opener is
  // not waiting for an answer, so nothing waits for an in-flight fetch.
  void OnOpenEvent(uint32_t node);
  void OnListed(uint32_t first, uint32_t end) override;
  // A read of a dataset file waited: counted as a stall (RecordReadStall).
  void OnReadWait(uint32_t node, uint64_t ns) override;
  // The kernel dropped the file's inode, and with it any pushed pages.
  void OnForget(uint32_t node) override;

  // FileOwner: the RAM cache asks whether to keep a loaded block.
  bool Keep(uint32_t node, std::vector<uint32_t>* drop) override;
  void Dropped(uint32_t node) override;

  // The planner's and the engine's counters now (the planner's snapshot
  // costs O(lead): planner.hpp).
  PrefetchStats Snapshot() const;
  // The members of stats.json's "prefetch" section (docs/fuse.md), from Snapshot().
  void WriteStats(clairfs::JsonWriter& w) const;
  // By manifest node: 1 for a file of the dataset (the opens the planner is told of).
  const std::vector<uint8_t>& in_dataset() const { return in_dataset_; }

 private:
  // The engine's counts of PrefetchStats, as they are kept.
  struct Counters {
    std::atomic<uint64_t> ready_in_page_cache{0}, ready_in_ram{0};
    std::atomic<uint64_t> waits{0}, wait_ns{0}, wait_timeouts{0};
    std::atomic<uint64_t> fetched{0}, fetched_bytes{0}, fetch_failures{0}, not_kept{0};
    std::atomic<uint64_t> pushes{0}, pushed_bytes{0}, push_unknown_inode{0}, push_errors{0};
    std::atomic<uint64_t> listed_pushes{0}, late_pushes{0};
    std::atomic<uint64_t> reloaded{0}, forgotten{0};
  };

  // Adds the counts of opens (and admissions, evictions) of `from` to `to`:
  // a replaced planner's, to the current one's.
  static void AddOpenCounts(const prefetch::PlannerStats& from, prefetch::PlannerStats* to);
  // The mean size of the dataset's files (0 with none).
  static uint64_t MeanFileBytes(const format::Manifest& manifest,
                                const std::vector<uint8_t>& in_dataset);
  // Logs, once per engine, when `planner`'s budget is short of its loaders'
  // read-ahead (prefetch::ReadAheadWarning).
  void WarnIfShortOfReadAhead(const prefetch::Planner& planner);
  void Observe(uint32_t node, bool answering);
  // Runs options_.diagnose once, when `planner` (the first) lost the order
  // in its first epoch. On a fetch thread, holding no lock while it runs.
  void MaybeDiagnose(const prefetch::Planner& planner);
  // Logs the first deviation once per engine (on a fetch thread, idle).
  void MaybeLogDeviation(const prefetch::Planner& planner);
  // stats.json's prefetch.first_deviation: "" for none, else the open's
  // number, the file's path and epoch, what the order expected next.
  std::string DescribeDeviation(const prefetch::Deviation& d) const;
  void Run(std::stop_token stop);
  void Fetch(prefetch::Planner& planner, prefetch::FileId file);
  // Drops `files` from the RAM cache if `planner` still decides.
  void Drop(const prefetch::Planner& planner, const std::vector<prefetch::FileId>& files);
  // Runs `change` (the planner letting go of `file`) and drops the file's
  // cached blocks, at one moment for the cache, if `planner` still decides.
  void Forget(const prefetch::Planner& planner, prefetch::FileId file,
              const std::function<void()>& change);
  // A planned fetch that did not happen: the planner and the cache let go.
  void Unfetched(prefetch::Planner& planner, prefetch::FileId file);
  bool Current(const prefetch::Planner& planner) const;
  // Pushes the kept, unpushed files of listings that are due.
  void RetryListed();
  // Pushes `file`'s bytes if the cache holds all of them; true when the
  // kernel took them (MarkPushed).
  bool PushKept(prefetch::FileId file, bool alone);
  bool Pushed(prefetch::FileId file) const;
  // The kernel took `file`'s `bytes`; `alone`: its blocks leave the RAM cache.
  void MarkPushed(prefetch::FileId file, uint64_t bytes, bool alone);
  bool HeldAlone(prefetch::FileId file) const;
  // `file` is no longer pushed: the bytes it had in the page cache alone (0
  // if none, or its blocks were kept).
  uint64_t NotPushedLocked(prefetch::FileId file) CLAIRFS_REQUIRES(mu_);

  struct Listing {
    uint32_t first, end;  // nodes [first, end)
    clairfs::Clock::TimePoint due;
    int attempts_left;
  };

  mutable Mutex planner_mu_;
  std::shared_ptr<prefetch::Planner> planner_ CLAIRFS_GUARDED_BY(planner_mu_);
  std::string sampler_ CLAIRFS_GUARDED_BY(planner_mu_);
  LoaderOf loader_of_ CLAIRFS_GUARDED_BY(planner_mu_);
  // The open counts of the planners replaced so far, added to the current one's.
  prefetch::PlannerStats retired_ CLAIRFS_GUARDED_BY(planner_mu_);
  uint64_t replacements_ CLAIRFS_GUARDED_BY(planner_mu_) = 0;
  // options_.diagnose's answer (stats.json: prefetch.likely_wrong).
  std::string likely_wrong_ CLAIRFS_GUARDED_BY(planner_mu_);
  std::atomic<bool> diagnosed_{false};         // options_.diagnose was called (or never will be)
  std::atomic<bool> logged_deviation_{false};  // MaybeLogDeviation logged
  const std::vector<uint8_t> in_dataset_;
  const uint64_t mean_file_bytes_;
  std::atomic<bool> warned_read_ahead_{false};
  const std::shared_ptr<const format::Manifest> manifest_;
  FileReader reader_;
  RamCache* const cache_;
  PageCachePusher* const pusher_;
  const PrefetchEngineOptions options_;

  mutable Mutex mu_;
  CondVar done_cv_;  // a fetch finished (waiting opens)
  CondVar work_cv_;  // an open moved the ranks (idle threads)
  std::unordered_set<prefetch::FileId> fetching_ CLAIRFS_GUARDED_BY(mu_);
  // Kept files whose bytes the kernel took, and the bytes held there alone
  // (0: its blocks were kept too, the file being read as it was pushed);
  // forgotten when the planner evicts them, a READ loads them again or the
  // kernel drops their inode, so a file kept again is pushed again.
  std::unordered_map<prefetch::FileId, uint64_t> pushed_ CLAIRFS_GUARDED_BY(mu_);
  uint64_t held_files_ CLAIRFS_GUARDED_BY(mu_) = 0;
  uint64_t held_bytes_ CLAIRFS_GUARDED_BY(mu_) = 0;
  // Listings whose refused pushes are to be retried.
  std::vector<Listing> listings_ CLAIRFS_GUARDED_BY(mu_);
  std::atomic<bool> wants_room_{false};  // the last plan stopped for want of room

  std::vector<std::jthread> threads_;
  Counters counters_;
};

}  // namespace clairfs::fs
