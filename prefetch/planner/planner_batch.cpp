// Planner: batch mode - epochs that are sets of batches in unknown order
// (batch_stream.hpp). Every method here expects mu_ held.
#include <algorithm>

#include "prefetch/planner/planner.hpp"

namespace clairfs::prefetch {

void Planner::OnBatchOpen(FileId file, bool repeat, OpenResult* r, MutexLock* lock) {
  std::vector<FileId> changed;
  BatchStream::Located at = batches_->Open(file, repeat, &changed);
  changed.push_back(file);  // an open moves its own key on
  if (at.pinned != nullptr) {
    ++stats_.batches_pinned;
    const bool whole = std::all_of(at.pinned->begin(), at.pinned->end(), [&](FileId f) {
      mu_.AssertHeld();  // called back here, under mu_
      return resident_.state(f) == ResidentSet::State::kResident;
    });
    stats_.batches_ready += whole ? 1 : 0;
  }
  batches_->DropPassed(&changed);
  RekeyAll(changed);
  if (!at.found && repeat) {
    ++stats_.repeat_opens;
    return;
  }
  const uint64_t epoch = at.found ? at.epoch : batches_->current_epoch();
  EpochCounts& counts = per_epoch_[epoch];
  counts.epoch = epoch;
  stall_epoch_ = epoch;
  ++counts.opens;
  ++(r->ready ? counts.ready : counts.stalls);
  if (at.found) {
    r->predicted = true;
    ++stats_.predicted_opens;
    stats_.consecutive_deviations = 0;
  } else {
    ++stats_.deviations;
    ++counts.deviations;
    ++stats_.consecutive_deviations;
  }
  if (EpochToGenerate(/*urgent=*/true).has_value()) Extend(lock);
}

void Planner::BatchFetches(size_t max, FetchPlan* plan) {
  bool room = true;
  // The begun batches first, in the order they were begun.
  batches_->WalkPinned([&](FileId f) {
    mu_.AssertHeld();  // called back here, under mu_
    if (resident_.state(f) != ResidentSet::State::kAbsent) return true;
    room = PlanBatchFetch(f, plan);
    if (!room) ++stats_.short_budget_stops;
    return room && plan->fetch.size() < max;
  });
  if (room && plan->fetch.size() < max) {
    // Then the candidates not begun, whole batches in key order; everything
    // before batch_scan_ is resident, in flight or skipped.
    batch_scan_ = batches_->WalkUnpinned(batch_scan_, [&](uint64_t, FileId f) {
      mu_.AssertHeld();  // called back here, under mu_
      if (resident_.state(f) != ResidentSet::State::kAbsent) return true;
      room = PlanBatchFetch(f, plan);
      return room && plan->fetch.size() < max;
    });
  }
  plan->room_bound = !room;
  stats_.fetches_planned += plan->fetch.size();
  stats_.peak_used_bytes = std::max(stats_.peak_used_bytes, resident_.used());
}

bool Planner::PlanBatchFetch(FileId f, FetchPlan* plan) {
  const uint64_t size = FileSize(f);
  if (size > resident_.budget()) {
    if (!oversize_seen_[f]) {
      oversize_seen_[f] = 1;
      ++stats_.oversize_skips;
    }
    return true;
  }
  auto failed = failures_.find(f);
  if (failed != failures_.end() && failed->second >= config_.max_fetch_retries) return true;
  std::vector<FileId> victims;
  if (!resident_.PickVictims(size, VictimBound(EffectiveKey(f)), &victims)) return false;
  uint64_t rewind = kNever;
  for (FileId v : victims) {
    resident_.Remove(v);
    plan->evict.push_back(v);
    // A pinned batch's fetch may evict a candidate the scan has passed.
    uint64_t k = batches_->Key(v);
    if (k >= kBatchUnpinned) rewind = std::min(rewind, k);
  }
  batch_scan_ = std::min(batch_scan_, rewind);
  stats_.evictions += victims.size();
  resident_.StartFetch(f, size);
  plan->fetch.push_back(f);
  return true;
}

void Planner::ExtendBatches(MutexLock* lock) {
  while (!extending_) {
    std::optional<uint64_t> epoch = EpochToGenerate();
    if (!epoch) return;
    extending_ = true;
    const std::vector<uint64_t> ranks = batches_->ranks();
    // The sampler (a permutation of the dataset) runs without the lock.
    MutexUnlock unlocked(lock, &mu_);
    std::vector<BatchUnits> units;
    Status error;
    for (uint64_t rank : ranks) {
      Result<std::optional<BatchEpoch>> got = input_.batches(rank, *epoch);
      if (!got.ok()) {
        error = got.status();
        break;
      }
      if (!got->has_value()) {
        error = Status::InvalidArgument("epoch " + std::to_string(*epoch) + " of rank " +
                                        std::to_string(rank) +
                                        " has a known order: batch mode needs every epoch as "
                                        "batches");
        break;
      }
      BatchEpoch& b = **got;
      BatchUnits u;
      u.lead = ToFiles(b.lead);
      u.batches = ToFiles(b.batches);
      u.reads = b.reads;
      u.alternative = std::move(b.alternative);
      for (auto* list : {&u.lead, &u.batches}) {
        for (auto& batch : *list) {
          // Files the daemon does not serve are no part of a batch's reads.
          batch.erase(std::remove(batch.begin(), batch.end(), kNoFile), batch.end());
        }
      }
      units.push_back(std::move(u));
    }
    // Indexing the epoch's entries (a sort) needs no lock either.
    std::optional<BatchStream::Prepared> prepared;
    if (error.ok()) prepared = batches_->Prepare(*epoch, std::move(units));
    unlocked.Relock();
    extending_ = false;
    if (next_epoch_ != *epoch) continue;
    if (!error.ok()) {
      ++stats_.order_errors;
      order_error_ = error;
      order_end_ = *epoch;
      return;
    }
    std::vector<FileId> changed;
    batches_->Append(std::move(*prepared), &changed);
    next_epoch_ = *epoch + 1;
    RekeyAll(changed);
  }
}

void Planner::ComputeBatchLead(PlannerStats* s) const {
  batches_->WalkCurrent(
      [&](FileId f) {
        mu_.AssertHeld();  // called back here, under mu_
        uint64_t bytes = resident_.ResidentBytes(f);
        if (bytes == kNever) return;
        ++s->lead_files;
        s->lead_bytes += bytes;
      },
      [&](const std::vector<FileId>& files) {
        const bool whole = std::all_of(files.begin(), files.end(), [&](FileId f) {
          mu_.AssertHeld();  // called back here, under mu_
          return resident_.state(f) == ResidentSet::State::kResident;
        });
        s->lead_steps += whole ? 1 : 0;
      });
}

}  // namespace clairfs::prefetch
