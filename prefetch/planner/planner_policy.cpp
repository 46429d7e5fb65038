// Planner: the caching policy (Belady with a known future) and the resident
// set's bookkeeping. Every method here takes mu_.
#include <algorithm>

#include "prefetch/planner/planner.hpp"

namespace clairfs::prefetch {

FetchPlan Planner::NextFetches(size_t max) {
  MutexLock lock(&mu_);
  FetchPlan plan;
  if (!config_.enabled || lost_ || max == 0) return plan;
  if (batches_) {
    BatchFetches(max, &plan);
    if (EpochToGenerate().has_value()) Extend(&lock);
    return plan;
  }
  // Everything before scan_ is resident, in flight, opened or skipped; the
  // scan resumes where it stopped, so each entry is visited O(1) times
  // between rewinds.
  uint64_t t = std::max(scan_, MinTailTime());
  const uint64_t end = stream_.end_time();
  std::vector<FileId> victims;
  for (; t < end && plan.fetch.size() < max; ++t) {
    if (stream_.Satisfied(t)) continue;
    FileId f = stream_.FileAt(t);
    if (resident_.state(f) != ResidentSet::State::kAbsent) continue;
    uint64_t size = FileSize(f);
    if (size > resident_.budget()) {
      // Never fits: skip it rather than block everything behind it.
      if (!oversize_seen_[f]) {
        oversize_seen_[f] = 1;
        ++stats_.oversize_skips;
      }
      continue;
    }
    auto failed = failures_.find(f);
    if (failed != failures_.end() && failed->second >= config_.max_fetch_retries) continue;
    // Belady: make room only from files used later than t (or never).
    if (!resident_.PickVictims(size, t, &victims)) {
      uint64_t min_head = *std::min_element(head_.begin(), head_.end());
      if (t / shape_.ranks < min_head + shape_.loader_steps) ++stats_.short_budget_stops;
      plan.room_bound = true;
      break;
    }
    for (FileId v : victims) {
      resident_.Remove(v);
      plan.evict.push_back(v);
    }
    stats_.evictions += victims.size();
    resident_.StartFetch(f, size);  // fits: victims freed enough
    plan.fetch.push_back(f);
  }
  scan_ = t;
  // Everything known is planned: the pending epoch's guessed files next.
  if (t >= end && !plan.room_bound && order_pending_ && !guess_.empty()) {
    GuessFetches(max, &plan);
  }
  stats_.fetches_planned += plan.fetch.size();
  stats_.peak_used_bytes = std::max(stats_.peak_used_bytes, resident_.used());
  // The prefetch threads generate the next epoch, off the FUSE path.
  if (EpochToGenerate().has_value()) Extend(&lock);
  return plan;
}

std::vector<FileId> Planner::OnFetched(FileId file, uint64_t bytes) {
  MutexLock lock(&mu_);
  std::vector<FileId> drop;
  if (bytes > resident_.budget()) {
    resident_.Remove(file);
    drop.push_back(file);
    return drop;
  }
  // A file larger than reserved may push the total over: make room from
  // files used later than it, or drop the file itself.
  uint64_t already = resident_.bytes(file);
  if (bytes > already && bytes - already > resident_.free()) {
    std::vector<FileId> victims;
    bool ok = resident_.PickVictims(bytes - already, VictimBound(EffectiveKey(file)), &victims);
    if (!ok || std::find(victims.begin(), victims.end(), file) != victims.end()) {
      resident_.Remove(file);
      drop.push_back(file);
      return drop;
    }
    for (FileId v : victims) {
      resident_.Remove(v);
      RewindScan(v);
      drop.push_back(v);
    }
    stats_.evictions += victims.size();
  }
  resident_.Finish(file, bytes, EffectiveKey(file));
  stats_.peak_used_bytes = std::max(stats_.peak_used_bytes, resident_.used());
  return drop;
}

void Planner::OnFetchFailed(FileId file) {
  MutexLock lock(&mu_);
  if (resident_.state(file) != ResidentSet::State::kInFlight) return;
  resident_.Remove(file);
  ++failures_[file];
  RewindScan(file);
}

void Planner::OnEvicted(FileId file) {
  MutexLock lock(&mu_);
  if (resident_.state(file) == ResidentSet::State::kAbsent) return;
  resident_.Remove(file);
  ++stats_.external_evictions;
  RewindScan(file);
}

bool Planner::Holds(FileId file) const {
  MutexLock lock(&mu_);
  return resident_.state(file) != ResidentSet::State::kAbsent;
}

std::optional<FileId> Planner::Victim() const {
  MutexLock lock(&mu_);
  FileId f = resident_.Furthest();
  if (f == kNoFile) return std::nullopt;
  return f;
}

Admission Planner::Admit(FileId file, uint64_t bytes) {
  MutexLock lock(&mu_);
  Admission a;
  if (resident_.state(file) != ResidentSet::State::kAbsent || bytes > resident_.budget()) {
    ++stats_.rejections;
    return a;
  }
  // The read being served needs the bytes now whatever happens; what counts
  // is the file's next use after it. Lost or disabled, every key is kNever
  // and the oldest files make room (FIFO).
  uint64_t next = config_.enabled && !lost_ ? NextUse(file) : kNever;
  std::vector<FileId> victims;
  if (!resident_.PickVictims(bytes, VictimBound(next), &victims)) {
    ++stats_.rejections;
    return a;
  }
  for (FileId v : victims) {
    resident_.Remove(v);
    RewindScan(v);
  }
  stats_.evictions += victims.size();
  resident_.StartFetch(file, bytes);
  a.admitted = true;
  a.evict = std::move(victims);
  ++stats_.admissions;
  stats_.peak_used_bytes = std::max(stats_.peak_used_bytes, resident_.used());
  return a;
}

}  // namespace clairfs::prefetch
