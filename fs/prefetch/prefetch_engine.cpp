#include "fs/prefetch/prefetch_engine.hpp"

#include <algorithm>

#include "fs/base/log.hpp"
#include "fs/core/thread_name.hpp"

namespace clairfs::fs {

namespace pf = clairfs::prefetch;

namespace {
// After a listing, refused pushes of its files are tried again this long
// after it, and once more kListedRetry after that if some were still refused.
constexpr std::chrono::milliseconds kListedDelay{5};
constexpr std::chrono::milliseconds kListedRetry{100};
}  // namespace

PrefetchEngine::PrefetchEngine(std::unique_ptr<pf::Planner> planner,
                               std::vector<uint8_t> in_dataset,
                               std::shared_ptr<const format::Manifest> manifest,
                               PayloadSource* source, RamCache* cache, Stats* stats,
                               PageCachePusher* pusher, PrefetchEngineOptions options)
    : planner_(std::move(planner)),
      in_dataset_(std::move(in_dataset)),
      reader_(std::move(manifest), source, cache, stats),
      cache_(cache),
      pusher_(pusher),
      options_(std::move(options)) {}

PrefetchEngine::~PrefetchEngine() { Stop(); }

void PrefetchEngine::Start() {
  for (uint32_t i = 0; i < options_.threads; ++i) {
    threads_.emplace_back([this](std::stop_token stop) {
      NameThread("clairfs-fetch");
      Run(stop);
    });
  }
}

void PrefetchEngine::Stop() {
  for (auto& t : threads_) t.request_stop();
  work_cv_.notify_all();
  threads_.clear();  // joins
}

void PrefetchEngine::OnOpen(uint32_t node) { Observe(node, /*answering=*/true); }

void PrefetchEngine::OnOpenEvent(uint32_t node) { Observe(node, /*answering=*/false); }

void PrefetchEngine::Observe(uint32_t node, bool answering) {
  if (node >= in_dataset_.size() || in_dataset_[node] == 0) return;
  Stats::Add(counters_.opens, 1);
  const pf::OpenResult r = planner_->OnOpen(node);
  // The ranks moved: a file may have become evictable for one that waits.
  if (wants_room_.load(std::memory_order_relaxed)) work_cv_.notify_one();
  if (r.ready) {
    Stats::Add(counters_.ready, 1);
    ReadData late;  // a held file whose push the kernel refused at fetch time
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = held_.find(node);
      const bool pushed = it != held_.end() && it->second.pushed;
      Stats::Add(pushed ? counters_.ready_pushed : counters_.ready_ram, 1);
      if (it != held_.end() && !pushed) late = it->second.data;
    }
    // The kernel looked the file up to open it: now it takes the bytes, and
    // the reads that follow this open stay in the page cache.
    if (late.total > 0 && PushHeld(node, late)) Stats::Add(counters_.late_pushes, 1);
    return;
  }
  Stats::Add(counters_.not_ready, 1);
  if (r.in_flight && answering) {
    // The fetch may already be decoding the file: waiting for it is cheaper
    // than a second read, and the push lands before the first READ.
    const auto t0 = std::chrono::steady_clock::now();
    bool done;
    {
      std::unique_lock<std::mutex> lock(mu_);
      done = done_cv_.wait_for(lock, options_.open_wait, [&] {
        return held_.count(node) != 0 || fetching_.count(node) == 0;
      });
    }
    const auto ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0)
            .count();
    Stats::Add(counters_.waits, 1);
    Stats::Add(counters_.wait_ns, static_cast<uint64_t>(ns));
    if (!done) Stats::Add(counters_.wait_timeouts, 1);
  }
  // Not ready and not under way: the reads that follow load it on demand.
  planner_->EndStall(r);
}

void PrefetchEngine::OnListed(uint32_t first, uint32_t end) {
  if (pusher_ == nullptr) return;
  // The kernel makes the inodes once the reply is out: first try a little
  // later, then once more in case the lister was slow to get the CPU.
  std::lock_guard<std::mutex> lock(mu_);
  if (held_.empty() || held_.size() == pushed_files_) return;
  listings_.push_back({first, end, std::chrono::steady_clock::now() + kListedDelay, 2});
}

bool PrefetchEngine::PushHeld(pf::FileId file, const ReadData& data) {
  if (pusher_ == nullptr || !pusher_->Push(uint64_t{file} + 1, 0, data).ok()) return false;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = held_.find(file);
  if (it != held_.end() && !it->second.pushed) {
    it->second.pushed = true;
    ++pushed_files_;
  }
  return true;
}

void PrefetchEngine::RetryListed() {
  const auto now = std::chrono::steady_clock::now();
  std::vector<std::pair<pf::FileId, ReadData>> todo;
  std::vector<Listing> due;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (listings_.empty()) return;
    auto late = std::partition(listings_.begin(), listings_.end(),
                               [&](const Listing& l) { return l.due > now; });
    due.assign(late, listings_.end());
    listings_.erase(late, listings_.end());
    for (const Listing& l : due) {
      for (uint32_t f = l.first; f < l.end; ++f) {
        auto it = held_.find(f);
        if (it != held_.end() && !it->second.pushed) todo.emplace_back(f, it->second.data);
      }
    }
  }
  bool refused = false;
  for (const auto& [file, data] : todo) {
    if (PushHeld(file, data)) {
      Stats::Add(counters_.listed_pushes, 1);
    } else {
      refused = true;
    }
  }
  if (!refused) return;
  std::lock_guard<std::mutex> lock(mu_);
  for (Listing l : due) {
    if (--l.attempts_left <= 0) continue;
    l.due = now + kListedRetry;
    listings_.push_back(l);
  }
}

void PrefetchEngine::Run(std::stop_token stop) {
  while (!stop.stop_requested()) {
    RetryListed();
    pf::FetchPlan plan;
    {
      std::lock_guard<std::mutex> order(plan_mu_);
      plan = planner_->NextFetches(options_.fetches_per_plan);
      Drop(plan.evict);
    }
    wants_room_.store(plan.fetch.empty() && plan.room_bound, std::memory_order_relaxed);
    if (plan.fetch.empty()) {
      planner_->Maintain();
      std::unique_lock<std::mutex> lock(mu_);
      work_cv_.wait_for(lock, options_.idle_poll, [&] { return stop.stop_requested(); });
      continue;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (pf::FileId f : plan.fetch) fetching_.insert(f);
    }
    for (size_t i = 0; i < plan.fetch.size(); ++i) {
      if (stop.stop_requested()) {
        for (size_t j = i; j < plan.fetch.size(); ++j) planner_->OnFetchFailed(plan.fetch[j]);
        std::lock_guard<std::mutex> lock(mu_);
        for (size_t j = i; j < plan.fetch.size(); ++j) fetching_.erase(plan.fetch[j]);
        break;
      }
      Fetch(plan.fetch[i]);
    }
  }
}

void PrefetchEngine::Fetch(pf::FileId file) {
  auto data = reader_.Read(file, 0, SIZE_MAX);
  if (!data.ok()) {
    Stats::Add(counters_.fetch_failures, 1);
    planner_->OnFetchFailed(file);
    {
      std::lock_guard<std::mutex> lock(mu_);
      fetching_.erase(file);
    }
    done_cv_.notify_all();
    return;
  }
  Held held{std::move(*data), false};
  const uint64_t bytes = held.data.total;
  uint64_t fetch_pushed = 0;
  if (pusher_ != nullptr && bytes > 0) {
    Status st = pusher_->Push(uint64_t{file} + 1, 0, held.data);
    if (st.ok()) {
      held.pushed = true;
      ++fetch_pushed;
      Stats::Add(counters_.pushes, 1);
      Stats::Add(counters_.pushed_bytes, bytes);
    } else if (st.IsNotFound()) {
      Stats::Add(counters_.push_unknown_inode, 1);  // RAM is the tier for this one
    } else {
      if (counters_.push_errors.fetch_add(1) == 0) {
        Log(LogLevel::kWarn,
            "page cache push failed (counted, not logged again): " + st.ToString());
      }
    }
  }
  std::lock_guard<std::mutex> order(plan_mu_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    fetching_.erase(file);
    held_bytes_ += bytes;
    auto old = held_.find(file);
    if (old != held_.end()) {  // a refetch replaces the old copy
      held_bytes_ -= old->second.data.total;
      pushed_files_ -= old->second.pushed ? 1 : 0;
    }
    pushed_files_ += fetch_pushed;
    held_.insert_or_assign(file, std::move(held));
    if (held_bytes_ > counters_.max_held_bytes.load()) counters_.max_held_bytes = held_bytes_;
  }
  Stats::Add(counters_.fetched, 1);
  Stats::Add(counters_.fetched_bytes, bytes);
  done_cv_.notify_all();
  Drop(planner_->OnFetched(file, bytes));
}

void PrefetchEngine::Drop(const std::vector<pf::FileId>& files) {
  if (files.empty()) return;
  std::vector<std::pair<pf::FileId, Held>> dropped;  // freed after the lock is released
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (pf::FileId f : files) {
      auto it = held_.find(f);
      if (it == held_.end()) continue;
      held_bytes_ -= it->second.data.total;
      pushed_files_ -= it->second.pushed ? 1 : 0;
      dropped.emplace_back(f, std::move(it->second));
      held_.erase(it);
    }
  }
  for (const auto& [file, held] : dropped) {
    Stats::Add(counters_.evictions, 1);
    // A whole-file read returns the file's blocks 0, 1, ... in order; the
    // cache must not keep what the planner no longer counts.
    for (uint32_t i = 0; i < held.data.slices.size(); ++i) cache_->Erase(MakeBlockKey(file, i));
  }
}

uint64_t PrefetchEngine::held_files() const {
  std::lock_guard<std::mutex> lock(mu_);
  return held_.size();
}

uint64_t PrefetchEngine::held_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return held_bytes_;
}

}  // namespace clairfs::fs
