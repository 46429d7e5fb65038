// Planner: generating epochs ahead of the ranks, and finding the ranks again
// after they left the predicted order.
#include <algorithm>

#include "base/log.hpp"
#include "prefetch/planner/match_epoch.hpp"
#include "prefetch/planner/planner.hpp"

namespace clairfs::prefetch {

std::optional<uint64_t> Planner::EpochToGenerate(bool urgent) const {
  if (!config_.enabled || next_epoch_ >= order_end_) return std::nullopt;
  if (batches_) {
    // The epochs being read and the one after them; urgent (an open that
    // waits) only for an epoch being read.
    const uint64_t want = batches_->frontier_epoch() + (urgent ? 0 : 1);
    if (next_epoch_ <= want) return next_epoch_;
    return std::nullopt;
  }
  if (stream_.empty()) return next_epoch_;
  // Tiny or empty epochs would otherwise be generated without end.
  constexpr uint64_t kMaxMaterialisedEpochs = 256;
  if (stream_.epoch_count() >= kMaxMaterialisedEpochs) return std::nullopt;
  uint64_t max_head = MaxHead();
  if (urgent) {
    if (max_head + shape_.window_steps >= stream_.end_step()) return next_epoch_;
    return std::nullopt;
  }
  // Keep the epoch after the furthest rank's, and at least min_lead_steps
  // past it (several epochs when an epoch is shorter than that).
  if (max_head + shape_.min_lead_steps >= stream_.end_step()) return next_epoch_;
  if (max_head >= stream_.EpochBase(stream_.last_epoch())) return next_epoch_;
  return std::nullopt;
}

void Planner::Extend(MutexLock* lock) {
  if (batches_) {
    ExtendBatches(lock);
    return;
  }
  while (!extending_) {
    std::optional<uint64_t> epoch = EpochToGenerate();
    if (!epoch) return;
    extending_ = true;
    const uint64_t gen = rebase_gen_;
    // What the guess at this epoch has so far (asked again: a rank's order
    // may have come).
    std::vector<GuessFrom> from = guess_epoch_ == *epoch
                                      ? guess_from_
                                      : std::vector<GuessFrom>(shape_.ranks, GuessFrom::kNothing);
    // The sampler (a randperm of the whole dataset) runs without the lock.
    MutexUnlock unlocked(lock, &mu_);
    Result<std::vector<std::vector<Index>>> orders = input_.order(config_.local_ranks, *epoch);
    std::vector<std::vector<FileId>> files, guessed;
    if (orders.ok()) files = ToFiles(*orders);
    const bool guess_changed = !orders.ok() && orders.status().code() == Code::kUnavailable &&
                               GuessPending(*epoch, &from, &guessed);
    unlocked.Relock();
    extending_ = false;
    if (gen != rebase_gen_ || next_epoch_ != *epoch) continue;  // a resync moved on
    if (!orders.ok() && orders.status().code() == Code::kUnavailable) {
      // A live source (orders reported by the job) has not been told this
      // epoch yet: asked again on the next call.
      order_pending_ = true;
      if (guess_changed) SetGuess(*epoch, std::move(from), std::move(guessed));
      return;
    }
    order_pending_ = false;
    if (!orders.ok()) {
      held_.clear();
      DropGuess();
      ++stats_.order_errors;
      order_error_ = orders.status();
      order_end_ = *epoch;
      return;
    }
    std::vector<FileId> changed;
    stream_.Append(*epoch, files, &changed);
    next_epoch_ = *epoch + 1;
    RekeyAll(changed);
    DropGuess();  // after the append: what it got right is counted
    if (!held_.empty()) ReplayHeld();
  }
}

bool Planner::GuessPending(uint64_t epoch, std::vector<GuessFrom>* from,
                           std::vector<std::vector<FileId>>* slots) const {
  // The node's ranks report their orders one by one, each as its loader
  // starts the epoch: a rank's own order is the surest guess at its part,
  // its fetches need not wait for the slowest rank. input_.guess fills the
  // other parts, asked once an epoch.
  const std::vector<uint64_t>& ranks = config_.local_ranks;
  slots->assign(ranks.size(), {});
  bool changed = false;
  for (size_t g = 0; g < ranks.size(); ++g) {
    if ((*from)[g] == GuessFrom::kOrder) continue;
    if (ranks.size() > 1) {
      Result<std::vector<std::vector<Index>>> own = input_.order({ranks[g]}, epoch);
      if (own.ok() && own->size() == 1) {
        (*slots)[g] = std::move(ToFiles(*own).front());
        (*from)[g] = GuessFrom::kOrder;
        changed = true;
        continue;
      }
    }
    if ((*from)[g] != GuessFrom::kNothing || !input_.guess) continue;
    Result<std::vector<std::vector<Index>>> guess = input_.guess({ranks[g]}, epoch);
    (*from)[g] = GuessFrom::kAsked;
    if (guess.ok() && guess->size() == 1) {
      (*slots)[g] = std::move(ToFiles(*guess).front());
      changed = true;
    }
  }
  return changed;
}

void Planner::SetGuess(uint64_t epoch, std::vector<GuessFrom> from,
                       std::vector<std::vector<FileId>> slots) {
  if (guess_epoch_ == epoch) {
    // The parts not asked again stay.
    for (size_t g = 0; g < slots.size(); ++g) {
      if (slots[g].empty() && g < guess_slots_.size()) slots[g] = std::move(guess_slots_[g]);
    }
  } else {
    // The last guess's fetches stay counted (guessed_used) until this one's.
    guess_fetched_before_ = std::move(guess_fetched_);
    guess_fetched_.clear();
  }
  DropGuess();
  guess_epoch_ = epoch;
  guess_from_ = std::move(from);
  size_t longest = 0;
  for (const auto& s : slots) longest = std::max(longest, s.size());
  for (size_t k = 0; k < longest; ++k) {
    for (const auto& s : slots) {
      if (k >= s.size() || s[k] == kNoFile || guess_pos_.count(s[k]) != 0) continue;
      guess_pos_.emplace(s[k], guess_.size());
      guess_.push_back(s[k]);
    }
  }
  guess_slots_ = std::move(slots);
  RekeyAll(guess_);
}

void Planner::DropGuess() {
  if (guess_epoch_ == kNever) return;
  std::vector<FileId> files = std::move(guess_);
  guess_.clear();
  guess_pos_.clear();
  guess_slots_.clear();
  guess_from_.clear();
  guess_epoch_ = kNever;
  guess_scan_ = 0;
  RekeyAll(files);
}

void Planner::GuessFetches(size_t max, FetchPlan* plan) {
  std::vector<FileId> victims;
  for (; guess_scan_ < guess_.size() && plan->fetch.size() < max; ++guess_scan_) {
    const FileId f = guess_[guess_scan_];
    if (resident_.state(f) != ResidentSet::State::kAbsent) continue;
    const uint64_t size = FileSize(f);
    if (size > resident_.budget()) continue;
    auto failed = failures_.find(f);
    if (failed != failures_.end() && failed->second >= config_.max_fetch_retries) continue;
    // Room only from files nothing known needs and later guesses.
    if (!resident_.PickVictims(size, kGuessBase + guess_scan_, &victims)) {
      plan->room_bound = true;
      return;
    }
    for (FileId v : victims) {
      resident_.Remove(v);
      plan->evict.push_back(v);
    }
    stats_.evictions += victims.size();
    resident_.StartFetch(f, size);
    plan->fetch.push_back(f);
    guess_fetched_.insert(f);
    ++stats_.guessed_fetches;
  }
}

void Planner::ReplayHeld() {
  std::vector<HeldOpen> held;
  held.swap(held_);
  // An entry taken by an earlier replay whose file was opened or consumed
  // since, or that has left its window, is settled.
  for (auto it = replayed_.begin(); it != replayed_.end();) {
    it = InWindow(it->first, it->second.at) ? std::next(it) : replayed_.erase(it);
  }
  for (HeldOpen& h : held) {
    const uint64_t t = Locate(h.file);
    if (t == kNever) {
      if (++h.appends < 2) held_.push_back(h);  // maybe the next epoch's
      continue;
    }
    --stats_.unreported_opens;
    ++stats_.late_opens;
    ++stats_.predicted_opens;
    EpochCounts& epoch = EpochOf(t);
    ++epoch.opens;
    ++(h.ready ? epoch.ready : epoch.stalls);
    if (h.file < consumed_at_.size()) consumed_at_[h.file] = t;
    Consume(t, /*held=*/true);
    NoteOutcome(h.file, /*located=*/true);
    if (replayed_.size() < kMaxHeldOpens) replayed_[h.file] = {t, h.ready};
  }
}

bool Planner::InWindow(FileId file, uint64_t t) const {
  if (file >= consumed_at_.size() || consumed_at_[file] != t) return false;
  const uint32_t g = static_cast<uint32_t>(t % shape_.ranks);
  return t / shape_.ranks + shape_.window_steps > head_[g];
}

bool Planner::TakeReplayed(FileId file, OpenResult* r) {
  auto it = replayed_.find(file);
  if (it == replayed_.end()) return false;
  const Replayed rep = it->second;
  replayed_.erase(it);
  if (!InWindow(file, rep.at)) return false;
  // The held open was a read outside the epoch: unreported, not late.
  --stats_.late_opens;
  ++stats_.unreported_opens;
  EpochCounts& epoch = EpochOf(rep.at);
  --(rep.ready ? epoch.ready : epoch.stalls);
  ++(r->ready ? epoch.ready : epoch.stalls);
  r->predicted = true;
  NoteOutcome(file, /*located=*/true);
  return true;
}

void Planner::Resync(MutexLock* lock) {
  resyncing_ = true;
  devs_since_attempt_ = 0;
  ++stats_.resync_attempts;
  const std::vector<FileId> recent = recent_;
  const uint64_t gen = rebase_gen_;
  struct Candidate {
    uint64_t epoch;
    std::vector<std::vector<FileId>> slots;
  };
  std::vector<Candidate> candidates;
  if (!stream_.empty()) {
    for (uint64_t e = stream_.first_epoch(); e <= stream_.last_epoch(); ++e) {
      candidates.push_back({e, stream_.Slots(e)});
    }
  }
  // Beyond the materialised epochs: a few more per attempt, round robin,
  // starting after them (a restart usually jumps forward).
  const uint64_t first = config_.start_epoch, end = config_.end_epoch;
  if (resync_failures_ == 0) deep_cursor_ = next_epoch_ < end ? next_epoch_ : first;
  std::vector<uint64_t> deep;
  for (uint64_t i = 0; i < end - first && deep.size() < config_.resync_scan_epochs; ++i) {
    uint64_t e = deep_cursor_;
    deep_cursor_ = e + 1 < end ? e + 1 : first;
    bool materialised = !stream_.empty() && e >= stream_.first_epoch() && e <= stream_.last_epoch();
    if (!materialised) deep.push_back(e);
  }
  MutexUnlock unlocked(lock, &mu_);
  for (uint64_t e : deep) {
    Result<std::vector<std::vector<Index>>> orders = input_.order(config_.local_ranks, e);
    if (orders.ok()) candidates.push_back({e, ToFiles(*orders)});
  }
  const Candidate* best = nullptr;
  EpochMatch best_match;
  for (const Candidate& c : candidates) {
    EpochMatch m = MatchEpoch(c.slots, recent, shape_.match_steps);
    if (m.score > best_match.score) {
      best_match = std::move(m);
      best = &c;
    }
  }
  unlocked.Relock();
  resyncing_ = false;
  // Tracking recovered (or another resync jumped) while the lock was free.
  if (gen != rebase_gen_ || located_run_ >= RecoveryRun()) {
    return;
  }
  if (best != nullptr && best_match.score >= shape_.resync_matches) {
    Rebase(best->epoch, best->slots, best_match.entries);
    ++stats_.resyncs;
    ++EpochOf(kNever).resyncs;
    stats_.predicted_opens += best_match.entries.size();
    lost_ = false;
    stats_.consecutive_deviations = 0;
    recent_.clear();
    resync_failures_ = 0;
    std::fill(outcomes_.begin(), outcomes_.end(), 0);
    ring_deviations_ = 0;
    Extend(lock);
    return;
  }
  lost_ = true;
  ++resync_failures_;  // backs off the next attempt (NoteOutcome)
  if (stats_.opens <= first_epoch_entries_) lost_early_ = true;
  if (!lost_logged_) {
    lost_logged_ = true;
    Log(LogLevel::kWarn,
        "prefetch: the opens stopped following the predicted order (" +
            std::to_string(stats_.deviations) +
            " opens not predicted; prefetch.lost in stats.json): files are read on demand until "
            "they follow it again. The prefetch settings may not match the training script "
            "(seed, epochs, world size, batch size, workers), or its loader is not one the "
            "order reporter knows (docs/guide.md). Said once.");
  }
}

void Planner::Rebase(uint64_t epoch, const std::vector<std::vector<FileId>>& slots,
                     const std::vector<std::pair<uint32_t, uint64_t>>& matched) {
  std::vector<FileId> changed;
  // Steps keep increasing across a rebase, so merged times never repeat.
  const uint64_t base = stream_.end_step();
  stream_.Reset(base, &changed);
  held_.clear();
  DropGuess();
  stream_.Append(epoch, slots, &changed);
  RekeyAll(changed);
  ++rebase_gen_;
  next_epoch_ = epoch + 1;
  order_end_ = config_.end_epoch;
  uint64_t kmin = kNever;
  for (const auto& m : matched) kmin = std::min(kmin, m.second);
  if (kmin == kNever) kmin = 0;
  std::fill(head_.begin(), head_.end(), base + kmin);
  std::fill(tail_.begin(), tail_.end(), base + kmin);
  for (const auto& [g, k] : matched) {
    uint64_t t = (base + k) * shape_.ranks + g;
    if (stream_.Satisfy(t)) Rekey(stream_.FileAt(t));
    head_[g] = std::max(head_[g], base + k + 1);
  }
  for (uint32_t g = 0; g < shape_.ranks; ++g) AdvanceTail(g);
  scan_ = MinTailTime();
}

}  // namespace clairfs::prefetch
