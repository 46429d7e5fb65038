// PrefetchEngine: runs the Planner inside clairfsd. It sees every open of a
// dataset file (an OpenObserver hooked into Vfs::Open), and its fetch threads
// take the planner's NextFetches, load each file through a FileReader (so it
// lands verified in the RAM cache), hold its blocks while the planner keeps
// the file, push the bytes into the kernel's page cache (PageCachePusher:
// fuse_lowlevel_notify_store) and drop file and blocks when the planner
// evicts it.
//
// Tiers: a pushed file is read at page-cache speed and never reaches the
// daemon; a push the kernel refuses (the inode is not known yet, ENOENT)
// leaves the RAM copy as the second tier; anything else is read on demand
// through the reactive LRU cache, which keeps working when the planner is
// disabled or lost.
//
// An open of a file whose fetch is under way waits for it, at most
// options.open_wait (the FUSE worker never blocks without bound). Pushes the
// kernel refused are tried again when it learns the inodes: a fetch thread
// retries the held files of a directory listing shortly after the listing
// (READDIRPLUS makes the inodes; a training framework lists its dataset
// before it reads it), and an open of a held file still not pushed pushes it
// before the open is answered.
//
// Idle fetch threads sleep options.idle_poll at most; an open wakes one only
// when the last plan stopped for want of room (an open may make some).
//
// Thread-safety: thread-safe. Lock order: plan_mu_, then mu_. mu_ is never
// held across a planner call, a file read or a push; plan_mu_ only across
// planner calls and drops (the planner, the cache and the pusher are
// thread-safe on their own).
// Start once, Stop (or the destructor) joins the threads.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "fs/cache/ram_cache.hpp"
#include "fs/core/stats.hpp"
#include "fs/store/payload_source.hpp"
#include "fs/vfs/file_reader.hpp"
#include "fs/vfs/open_observer.hpp"
#include "partitioner/format/manifest.hpp"
#include "prefetch/planner/planner.hpp"

namespace clairfs::fs {

struct PrefetchEngineOptions {
  uint32_t threads = 2;                       // fetch threads
  std::chrono::milliseconds open_wait{2000};  // longest wait of an open for its fetch
  size_t fetches_per_plan = 4;                // files one thread takes from NextFetches at a time
  std::chrono::milliseconds idle_poll{20};  // a thread with nothing to do sleeps this long at most
  std::string sampler;                     // for stats.json only
};

class PrefetchEngine final : public OpenObserver {
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

  void OnOpen(uint32_t node) override;
  // An open seen after the fact (OpenWatcher): as OnOpen, but the opener is
  // not waiting for an answer, so nothing waits for an in-flight fetch.
  void OnOpenEvent(uint32_t node);
  void OnListed(uint32_t first, uint32_t end) override;

  // The members of stats.json's "prefetch" section (docs/fuse.md).
  void WriteStats(clairfs::JsonWriter& w) const;
  prefetch::PlannerStats PlannerStats() const { return planner_->Stats(); }
  // Files held in RAM by the engine right now, and their bytes.
  // By manifest node: 1 for a file of the dataset (the opens the planner is told of).
  const std::vector<uint8_t>& in_dataset() const { return in_dataset_; }
  uint64_t held_files() const;
  uint64_t held_bytes() const;

  struct Counters {
    std::atomic<uint64_t> opens{0}, ready{0}, ready_pushed{0}, ready_ram{0};
    std::atomic<uint64_t> waits{0}, wait_ns{0}, wait_timeouts{0}, not_ready{0};
    std::atomic<uint64_t> fetched{0}, fetched_bytes{0}, fetch_failures{0}, evictions{0};
    std::atomic<uint64_t> pushes{0}, pushed_bytes{0}, push_unknown_inode{0}, push_errors{0};
    std::atomic<uint64_t> listed_pushes{0};  // refused at fetch, pushed after a listing
    std::atomic<uint64_t> late_pushes{0};    // refused at fetch, pushed at the file's open
    std::atomic<uint64_t> max_held_bytes{0};
  };
  const Counters& counters() const { return counters_; }

 private:
  struct Held {
    ReadData data;
    bool pushed = false;
  };
  void Observe(uint32_t node, bool answering);
  void Run(std::stop_token stop);
  void Fetch(prefetch::FileId file);
  void Drop(const std::vector<prefetch::FileId>& files);
  // Pushes the held, unpushed files of listings that are due.
  void RetryListed();
  // Pushes `data` of `file`; true when the kernel took it.
  bool PushHeld(prefetch::FileId file, const ReadData& data);

  struct Listing {
    uint32_t first, end;  // nodes [first, end)
    std::chrono::steady_clock::time_point due;
    int attempts_left;
  };

  const std::unique_ptr<prefetch::Planner> planner_;
  const std::vector<uint8_t> in_dataset_;
  FileReader reader_;
  RamCache* const cache_;
  PageCachePusher* const pusher_;
  const PrefetchEngineOptions options_;

  // The planner frees room the moment it plans an eviction; the engine drops
  // the file just after. plan_mu_ keeps a finished fetch from landing in
  // between, so what the engine holds never exceeds the budget either. Taken
  // before mu_, never inside a planner call.
  std::mutex plan_mu_;
  mutable std::mutex mu_;            // guards the five members below
  std::condition_variable done_cv_;  // a fetch finished (waiting opens)
  std::condition_variable work_cv_;  // an open moved the ranks (idle threads)
  std::unordered_map<prefetch::FileId, Held> held_;
  std::unordered_set<prefetch::FileId> fetching_;
  uint64_t held_bytes_ = 0;
  uint64_t pushed_files_ = 0;      // held files whose bytes the kernel took
  std::vector<Listing> listings_;  // listings whose refused pushes are to be retried
  std::atomic<bool> wants_room_{false};  // the last plan stopped for want of room

  std::vector<std::jthread> threads_;
  Counters counters_;
};

}  // namespace clairfs::fs
