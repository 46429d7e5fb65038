#include "fs/engine/prefetch_engine.hpp"

#include <algorithm>

#include "base/log.hpp"
#include "base/thread_name.hpp"

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
    : in_dataset_(std::move(in_dataset)),
      mean_file_bytes_(MeanFileBytes(*manifest, in_dataset_)),
      manifest_(manifest),
      reader_(std::move(manifest), source, cache, stats),
      cache_(cache),
      pusher_(pusher),
      options_(std::move(options)) {
  {
    MutexLock lock(&planner_mu_);
    planner_ = std::move(planner);
    sampler_ = options_.sampler;
    WarnIfShortOfReadAhead(*planner_);
  }
  cache_->SetOwner(this);
}

uint64_t PrefetchEngine::MeanFileBytes(const format::Manifest& manifest,
                                       const std::vector<uint8_t>& in_dataset) {
  uint64_t files = 0, bytes = 0;
  for (uint32_t n = 0; n < in_dataset.size() && n < manifest.node_count(); ++n) {
    if (in_dataset[n] == 0) continue;
    ++files;
    bytes += manifest.node(n).size;
  }
  return files == 0 ? 0 : bytes / files;
}

void PrefetchEngine::WarnIfShortOfReadAhead(const pf::Planner& planner) {
  std::optional<std::string> why = pf::ReadAheadWarning(planner.config(), mean_file_bytes_);
  if (why && !warned_read_ahead_.exchange(true)) Log(LogLevel::kWarn, "prefetch: " + *why);
}

std::shared_ptr<pf::Planner> PrefetchEngine::planner() const {
  MutexLock lock(&planner_mu_);
  return planner_;
}

void PrefetchEngine::Replace(std::unique_ptr<pf::Planner> planner, std::string sampler,
                             LoaderOf loader_of) {
  {
    MutexLock lock(&planner_mu_);
    prefetch::PlannerStats old = planner_->Stats();
    AddOpenCounts(retired_, &old);  // the retired planners' opens came first
    retired_ = std::move(old);
    planner_ = std::move(planner);
    sampler_ = std::move(sampler);
    loader_of_ = std::move(loader_of);
    ++replacements_;
    WarnIfShortOfReadAhead(*planner_);
  }
  // Every kept byte was the old planner's: drop them all (the cache tells
  // the new planner of each, which holds none of them).
  cache_->SetOwner(this);
  {
    MutexLock lock(&mu_);
    pushed_.clear();
    held_files_ = 0;
    held_bytes_ = 0;
  }
  work_cv_.NotifyAll();
}

PrefetchEngine::~PrefetchEngine() {
  Stop();
  cache_->SetOwner(nullptr);
}

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
  work_cv_.NotifyAll();
  threads_.clear();  // joins
}

void PrefetchEngine::OnOpen(uint32_t node) { Observe(node, /*answering=*/true); }

void PrefetchEngine::OnOpenEvent(uint32_t node) { Observe(node, /*answering=*/false); }

bool PrefetchEngine::Keep(uint32_t node, std::vector<uint32_t>* drop) {
  const std::shared_ptr<pf::Planner> planner = this->planner();
  // Counted already: fetched, being fetched, or kept after an earlier block;
  // or pushed, and loaded again by a READ the page cache could not answer.
  if (planner->Holds(node)) {
    MutexLock lock(&mu_);
    auto it = pushed_.find(node);
    if (it != pushed_.end() && it->second > 0) {
      NotPushedLocked(node);
      Stats::Add(counters_.reloaded, 1);
    }
    return true;
  }
  const uint64_t size = manifest_->node(node).size;
  pf::Admission a = planner->Admit(node, size);
  bool kept = a.admitted;
  if (kept) {
    // The bytes are kept as soon as the cache inserts them, so the file is
    // resident at once; a file larger than reserved cannot happen here.
    std::vector<pf::FileId> more = planner->OnFetched(node, size);
    kept = std::find(more.begin(), more.end(), node) == more.end();
    a.evict.insert(a.evict.end(), more.begin(), more.end());
  }
  if (!a.evict.empty()) {
    MutexLock lock(&mu_);
    for (pf::FileId f : a.evict) NotPushedLocked(f);
  }
  drop->insert(drop->end(), a.evict.begin(), a.evict.end());
  return kept;
}

void PrefetchEngine::Dropped(uint32_t node) {
  planner()->OnEvicted(node);
  MutexLock lock(&mu_);
  NotPushedLocked(node);
}

uint64_t PrefetchEngine::NotPushedLocked(pf::FileId file) {
  auto it = pushed_.find(file);
  if (it == pushed_.end()) return 0;
  const uint64_t held = it->second;
  if (held > 0) {
    held_files_--;
    held_bytes_ -= held;
  }
  pushed_.erase(it);
  return held;
}

bool PrefetchEngine::HeldAlone(pf::FileId file) const {
  MutexLock lock(&mu_);
  auto it = pushed_.find(file);
  return it != pushed_.end() && it->second > 0;
}

void PrefetchEngine::MarkPushed(pf::FileId file, uint64_t bytes, bool alone) {
  {
    MutexLock lock(&mu_);
    if (!pushed_.try_emplace(file, alone ? bytes : 0).second || !alone) return;
    held_files_++;
    held_bytes_ += bytes;
  }
  // Unless something let go of the file meanwhile (the planner, a READ
  // that loaded it again), which decides for its blocks itself.
  cache_->EraseFileIf(file, [&] { return HeldAlone(file); });
}

void PrefetchEngine::OnForget(uint32_t node) {
  {
    MutexLock lock(&mu_);
    // Pushed with its blocks kept: the RAM cache still has it (an open
    // pushes it again); not pushed: nothing was lost.
    if (NotPushedLocked(node) == 0) return;
  }
  // Its bytes were in the page cache alone: the node no longer has them.
  Stats::Add(counters_.forgotten, 1);
  planner()->OnEvicted(node);
  work_cv_.NotifyOne();
}

bool PrefetchEngine::Pushed(pf::FileId file) const {
  MutexLock lock(&mu_);
  return pushed_.count(file) != 0;
}

void PrefetchEngine::Observe(uint32_t node, bool answering) {
  if (node >= in_dataset_.size() || in_dataset_[node] == 0) return;
  const std::shared_ptr<pf::Planner> planner = this->planner();
  const pf::OpenResult r = planner->OnOpen(node);
  // The ranks moved: a file may have become evictable for one that waits.
  if (wants_room_.load(std::memory_order_relaxed)) work_cv_.NotifyOne();
  if (r.ready) {
    const bool pushed = Pushed(node);
    Stats::Add(pushed ? counters_.ready_in_page_cache : counters_.ready_in_ram, 1);
    // The kernel looked the file up to open it: now it takes the bytes (a
    // push refused at fetch time, or a file kept after a demand read), and
    // the reads that follow this open stay in the page cache.
    // The job is reading it: its READs under way may need the blocks, so
    // they stay (the file is in RAM twice until the planner lets it go).
    if (!pushed && PushKept(node, /*alone=*/false)) Stats::Add(counters_.late_pushes, 1);
    return;
  }
  if (r.in_flight && answering) {
    // The fetch may already be decoding the file: waiting for it is cheaper
    // than a second read, and the push lands before the first READ.
    const auto t0 = options_.clock->Now();
    const auto deadline = std::chrono::steady_clock::now() + options_.open_wait;
    bool done = true;
    {
      MutexLock lock(&mu_);
      while (fetching_.count(node) != 0) {
        if (!done_cv_.WaitUntil(&lock, deadline)) {
          done = fetching_.count(node) == 0;
          break;
        }
      }
    }
    const auto ns = (options_.clock->Now() - t0).count();
    Stats::Add(counters_.waits, 1);
    Stats::Add(counters_.wait_ns, static_cast<uint64_t>(ns));
    if (!done) Stats::Add(counters_.wait_timeouts, 1);
  }
  // Not ready and not under way: the reads that follow load it on demand.
  planner->EndStall(r);
}

void PrefetchEngine::OnReadWait(uint32_t node, uint64_t ns) {
  if (node >= in_dataset_.size() || in_dataset_[node] == 0) return;
  planner()->RecordReadStall(std::chrono::nanoseconds(ns));
}

void PrefetchEngine::OnListed(uint32_t first, uint32_t end) {
  if (pusher_ == nullptr) return;
  // The kernel makes the inodes once the reply is out: first try a little
  // later, then once more in case the lister was slow to get the CPU.
  MutexLock lock(&mu_);
  listings_.push_back({first, end, options_.clock->Now() + kListedDelay, 2});
}

bool PrefetchEngine::PushKept(pf::FileId file, bool alone) {
  if (pusher_ == nullptr) return false;
  std::optional<ReadData> data = reader_.Peek(file);
  if (!data || data->total == 0 || !pusher_->Push(InodeOfNode(file), 0, *data).ok()) return false;
  MarkPushed(file, data->total, alone);
  return true;
}

void PrefetchEngine::RetryListed() {
  const auto now = options_.clock->Now();
  std::vector<Listing> due;
  {
    MutexLock lock(&mu_);
    if (listings_.empty()) return;
    auto late = std::partition(listings_.begin(), listings_.end(),
                               [&](const Listing& l) { return l.due > now; });
    due.assign(late, listings_.end());
    listings_.erase(late, listings_.end());
  }
  bool refused = false;
  const std::shared_ptr<pf::Planner> planner = this->planner();
  for (const Listing& l : due) {
    for (uint32_t f = l.first; f < l.end; ++f) {
      if (f >= in_dataset_.size() || in_dataset_[f] == 0 || !planner->Holds(f) || Pushed(f)) {
        continue;
      }
      if (PushKept(f, /*alone=*/true)) {
        Stats::Add(counters_.listed_pushes, 1);
      } else {
        refused = true;
      }
    }
  }
  if (!refused) return;
  MutexLock lock(&mu_);
  for (Listing l : due) {
    if (--l.attempts_left <= 0) continue;
    l.due = now + kListedRetry;
    listings_.push_back(l);
  }
}

void PrefetchEngine::Run(std::stop_token stop) {
  while (!stop.stop_requested()) {
    RetryListed();
    const std::shared_ptr<pf::Planner> planner = this->planner();
    pf::FetchPlan plan = planner->NextFetches(options_.fetches_per_plan);
    Drop(*planner, plan.evict);
    wants_room_.store(plan.fetch.empty() && plan.room_bound, std::memory_order_relaxed);
    if (plan.fetch.empty()) {
      planner->Maintain();
      MaybeDiagnose(*planner);
      MaybeLogDeviation(*planner);
      MutexLock lock(&mu_);
      if (!stop.stop_requested()) {
        work_cv_.WaitUntil(&lock, std::chrono::steady_clock::now() + options_.idle_poll);
      }
      continue;
    }
    {
      MutexLock lock(&mu_);
      for (pf::FileId f : plan.fetch) fetching_.insert(f);
    }
    for (size_t i = 0; i < plan.fetch.size(); ++i) {
      if (stop.stop_requested()) {
        for (size_t j = i; j < plan.fetch.size(); ++j) Unfetched(*planner, plan.fetch[j]);
        MutexLock lock(&mu_);
        for (size_t j = i; j < plan.fetch.size(); ++j) fetching_.erase(plan.fetch[j]);
        break;
      }
      Fetch(*planner, plan.fetch[i]);
    }
  }
}

void PrefetchEngine::MaybeLogDeviation(const pf::Planner& planner) {
  if (logged_deviation_.load(std::memory_order_relaxed)) return;
  pf::Deviation d = planner.FirstDeviation();
  {
    MutexLock lock(&planner_mu_);
    if (retired_.first_deviation.open != 0) {
      d = retired_.first_deviation;
    } else if (d.open != 0) {
      d.open += retired_.opens;
    }
  }
  if (d.open == 0 || logged_deviation_.exchange(true)) return;
  Log(LogLevel::kWarn,
      "prefetch: an open the order does not hold (counted in prefetch.deviations, the first in "
      "prefetch.first_deviation; said once): " +
          DescribeDeviation(d));
}

void PrefetchEngine::MaybeDiagnose(const pf::Planner& planner) {
  if (!options_.diagnose || diagnosed_.load(std::memory_order_relaxed)) return;
  {
    MutexLock lock(&planner_mu_);
    if (replacements_ != 0) {
      diagnosed_.store(true);  // the job's report is followed: nothing to diagnose
      return;
    }
  }
  std::optional<std::vector<pf::FileId>> opens = planner.FirstEpochLoss();
  if (!opens || diagnosed_.exchange(true)) return;
  std::string found = options_.diagnose(*opens);
  MutexLock lock(&planner_mu_);
  likely_wrong_ = std::move(found);
}

void PrefetchEngine::Fetch(pf::Planner& planner, pf::FileId file) {
  // The blocks land in the RAM cache as they load: the planner counts the
  // file (in flight), so the cache keeps them.
  auto data = reader_.Read(file, 0, SIZE_MAX);
  const bool ok = data.ok() && reader_.Peek(file).has_value();
  if (!ok) {
    if (data.ok()) {
      // Loaded but not kept: the room was not free yet (an eviction decided
      // a moment earlier had not reached the cache). Not counted any more.
      Stats::Add(counters_.not_kept, 1);
      Forget(planner, file, [&] { planner.OnEvicted(file); });
    } else {
      Stats::Add(counters_.fetch_failures, 1);
      Unfetched(planner, file);
    }
    {
      MutexLock lock(&mu_);
      fetching_.erase(file);
    }
    done_cv_.NotifyAll();
    return;
  }
  const uint64_t bytes = data->total;
  bool pushed = false;
  if (pusher_ != nullptr && bytes > 0) {
    Status st = pusher_->Push(InodeOfNode(file), 0, *data);
    if (st.ok()) {
      pushed = true;
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
  if (pushed) {
    MarkPushed(file, bytes, /*alone=*/true);
  } else {
    MutexLock lock(&mu_);
    NotPushedLocked(file);
  }
  // The planner knows the file resident before anyone waiting for it, or
  // reading the counters, is told it is done: an open that follows finds it
  // ready.
  Drop(planner, planner.OnFetched(file, bytes));
  {
    MutexLock lock(&mu_);
    fetching_.erase(file);
  }
  Stats::Add(counters_.fetched, 1);
  Stats::Add(counters_.fetched_bytes, bytes);
  done_cv_.NotifyAll();
}

void PrefetchEngine::Forget(const pf::Planner& planner, pf::FileId file,
                            const std::function<void()>& change) {
  if (Current(planner)) {
    cache_->EraseFileIf(file, [&] {
      change();
      // A reader may have admitted the file again since this plan was made.
      return !planner.Holds(file);
    });
  } else {
    change();  // a replaced planner's files are not the cache's business
  }
}

void PrefetchEngine::Unfetched(pf::Planner& planner, pf::FileId file) {
  // A reader may have loaded the file while it was in flight (kept: the
  // planner held it); those bytes go with the planner's count.
  Forget(planner, file, [&] { planner.OnFetchFailed(file); });
}

bool PrefetchEngine::Current(const pf::Planner& planner) const {
  MutexLock lock(&planner_mu_);
  return planner_.get() == &planner;
}

void PrefetchEngine::Drop(const pf::Planner& planner, const std::vector<pf::FileId>& files) {
  // A replaced planner's evictions are not the cache's business any more.
  if (files.empty() || !Current(planner)) return;
  {
    MutexLock lock(&mu_);
    for (pf::FileId f : files) NotPushedLocked(f);
  }
  // A file a reader loaded again since the planner let it go is counted
  // again (Keep admitted it): it stays.
  for (pf::FileId f : files) cache_->EraseFileIf(f, [&] { return !planner.Holds(f); });
}

}  // namespace clairfs::fs
