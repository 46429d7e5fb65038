#include "prefetch/planner/planner.hpp"

#include <algorithm>

namespace clairfs::prefetch {

Result<std::unique_ptr<Planner>> Planner::Create(PlannerConfig config, PlannerInput input,
                                                 const Clock& clock) {
  Result<PlannerShape> shape = ValidatePlannerConfig(config, input);
  if (!shape.ok()) return shape.status();
  std::unique_ptr<Planner> p(new Planner(std::move(config), std::move(input), *shape, clock));
  if (p->config_.enabled && p->input_.batches) {
    // The start epoch says whether the epochs are sets of batches.
    auto probe = p->input_.batches(p->config_.local_ranks.front(), p->config_.start_epoch);
    if (!probe.ok()) return probe.status();
    if (probe->has_value()) {
      p->batches_ = std::make_unique<BatchStream>(p->config_.local_ranks, p->config_.start_epoch);
      // No other thread has the planner yet; stats_ is written under mu_ all the same.
      MutexLock lock(&p->mu_);
      p->stats_.batch_mode = true;
    }
  }
  if (p->config_.enabled) {
    MutexLock lock(&p->mu_);
    p->Extend(&lock);
    const bool none = p->batches_ ? p->batches_->empty() : p->stream_.empty();
    if (none && !p->order_error_.ok()) return p->order_error_;
    if (!p->batches_ && !p->stream_.empty()) {
      p->first_epoch_entries_ =
          (p->stream_.first_epoch_end() - p->stream_.begin_step()) * p->shape_.ranks;
    }
  }
  return p;
}

Planner::Planner(PlannerConfig config, PlannerInput input, PlannerShape shape, const Clock& clock)
    : config_(std::move(config)),
      input_(std::move(input)),
      shape_(shape),
      clock_(clock),
      stream_(shape.ranks, input_.files()),
      resident_(config_.budget_bytes),
      head_(shape.ranks, 0),
      tail_(shape.ranks, 0),
      next_epoch_(config_.start_epoch),
      order_end_(config_.end_epoch),
      outcomes_(2 * config_.deviation_threshold, 0),
      deep_cursor_(config_.start_epoch),
      pins_(shape.pin_opens, kNoFile),
      opened_ring_(shape.merge_window, kNoFile),
      consumed_at_(input_.files(), kNever),
      oversize_seen_(input_.files(), 0) {
  stats_.enabled = config_.enabled;
  stats_.budget_bytes = config_.budget_bytes;
  stats_.epoch = config_.start_epoch;
}

OpenResult Planner::OnOpen(FileId file) {
  MutexLock lock(&mu_);
  OpenResult r;
  r.at = clock_.Now();
  ++stats_.opens;
  ResidentSet::State st = resident_.state(file);
  r.ready = st == ResidentSet::State::kResident;
  r.in_flight = st == ResidentSet::State::kInFlight;
  ++(r.ready ? stats_.ready_opens : stats_.stalled_opens);
  if ((!guess_fetched_.empty() || !guess_fetched_before_.empty()) &&
      guess_fetched_.erase(file) + guess_fetched_before_.erase(file) != 0 && r.ready) {
    ++stats_.guessed_used;
  }
  // Opened again while its first open is still recent (a library that opens
  // a file twice): not a new read of the order.
  const bool repeat = pinned_.count(file) != 0 || opened_.count(file) != 0;
  Pin(file);
  Remember(file);
  if (!config_.enabled) return r;
  failures_.erase(file);
  if (batches_) {
    OnBatchOpen(file, repeat, &r, &lock);
    return r;
  }

  // Opened again while the entry its last open took is still inside its
  // rank's window: the same sample opening its file once more (a header
  // read, then the decode; hashing, then decoding), if the open was among
  // the last few (pinned) or this loader has been seen to reopen files. When
  // another entry of the file is due too (the file ends one epoch and starts
  // the next) an open cannot say which it is: a repeat if the loader reopens
  // files and the last open was pinned, else the next use. (A shared
  // stream's readers each take an entry of their own: there a recent open
  // may be another reader's.)
  const bool same_sample = shape_.merge_window == 0 && file < consumed_at_.size() &&
                           consumed_at_[file] != kNever && InWindow(file, consumed_at_[file]);
  if (same_sample && repeat && reopens_seen_ > 0) {
    NoteReopen(true);
    ++stats_.repeat_opens;
    return r;
  }
  uint64_t found = Locate(file);
  const bool reopen = repeat || (same_sample && reopens_seen_ > 0);
  if (found == kNever && !reopen && EpochToGenerate(/*urgent=*/true).has_value()) {
    // Its epoch may have just become known (a live source): look again.
    Extend(&lock);
    found = Locate(file);
  }
  if (found == kNever && TakeReplayed(file, &r)) return r;
  if (found == kNever && reopen) {
    NoteReopen(same_sample);
    ++stats_.repeat_opens;
    return r;
  }
  NoteReopen(false);
  if (first_opens_.size() < kFirstOpens) first_opens_.push_back(file);
  if (found == kNever && order_pending_) {
    // The order of the epoch being started is not reported yet: an open
    // nothing could foresee, and no sign that the prediction is wrong.
    ++stats_.unreported_opens;
    if (held_.size() < kMaxHeldOpens) held_.push_back({file, r.ready, 0});
    return r;
  }
  EpochCounts& epoch = EpochOf(found);
  stall_epoch_ = epoch.epoch;
  ++epoch.opens;
  ++(r.ready ? epoch.ready : epoch.stalls);
  if (found != kNever) {
    if (file < consumed_at_.size()) consumed_at_[file] = found;
    Consume(found);
    r.predicted = true;
    ++stats_.predicted_opens;
  } else {
    ++stats_.deviations;
    ++epoch.deviations;
    if (stats_.first_deviation.open == 0) NoteFirstDeviation(file, epoch.epoch);
  }
  bool resync = NoteOutcome(file, found != kNever);
  if (resync) {
    Resync(&lock);
  } else if (EpochToGenerate(/*urgent=*/true).has_value()) {
    Extend(&lock);
  }
  return r;
}

uint64_t Planner::Locate(FileId file) const {
  // The entries of `file` are chained in time order; take the first one that
  // lies in its rank's window.
  const uint32_t g_count = shape_.ranks;
  const uint64_t limit = MaxHead() + shape_.window_steps;
  for (uint64_t t = stream_.NextUse(file); t != kNever; t = stream_.NextOccurrence(t)) {
    uint64_t s = t / g_count;
    uint32_t g = static_cast<uint32_t>(t % g_count);
    if (s >= limit) break;
    if (stream_.Satisfied(t)) continue;
    if (s >= tail_[g] && s < head_[g] + shape_.window_steps) return t;
  }
  return kNever;
}

void Planner::NoteReopen(bool reopen) {
  reopens_seen_ -= reopen_ring_[reopen_pos_];
  reopen_ring_[reopen_pos_] = reopen ? 1 : 0;
  reopens_seen_ += reopen_ring_[reopen_pos_];
  reopen_pos_ = (reopen_pos_ + 1) % reopen_ring_.size();
}

uint64_t Planner::RecoveryRun() const {
  return std::clamp<uint64_t>(config_.deviation_threshold / 2, 1, 4);
}

bool Planner::NoteOutcome(FileId file, bool located) {
  if (outcomes_.empty()) return false;
  ring_deviations_ -= outcomes_[outcome_pos_];
  outcomes_[outcome_pos_] = located ? 0 : 1;
  ring_deviations_ += outcomes_[outcome_pos_];
  outcome_pos_ = (outcome_pos_ + 1) % outcomes_.size();
  const uint64_t n = config_.deviation_threshold;
  if (located) {
    stats_.consecutive_deviations = 0;
    // A chance hit among deviations (a different seed finds a file in some
    // window now and then) is not a recovery; a run of hits is.
    if (++located_run_ >= RecoveryRun()) {
      lost_ = false;
      recent_.clear();
      devs_since_attempt_ = 0;
      resync_failures_ = 0;
    }
    return false;
  }
  located_run_ = 0;
  ++stats_.consecutive_deviations;
  ++devs_since_attempt_;
  recent_.push_back(file);
  if (recent_.size() > n) recent_.erase(recent_.begin());
  // Deviations dominate the recent opens, and (after failed attempts) enough
  // new ones arrived: a long unrelated pass backs off exponentially.
  uint64_t due = n << std::min<uint64_t>(resync_failures_, 6);
  return ring_deviations_ >= n && devs_since_attempt_ >= due && !resyncing_;
}

void Planner::EndStall(const OpenResult& open) {
  Clock::Duration waited = clock_.Now() - open.at;
  RecordStall(waited < Clock::Duration::zero() ? Clock::Duration::zero() : waited);
}

void Planner::RecordStall(Clock::Duration waited) {
  MutexLock lock(&mu_);
  AddStall(waited);
}

void Planner::RecordReadStall(Clock::Duration waited) {
  MutexLock lock(&mu_);
  ++stats_.read_stalls;
  stats_.read_stall_ns += AddStall(waited);
}

uint64_t Planner::AddStall(Clock::Duration waited) {
  const uint64_t ns = static_cast<uint64_t>(std::max<int64_t>(0, waited.count()));
  stats_.stall_ns += ns;
  stats_.max_stall_ns = std::max(stats_.max_stall_ns, ns);
  // Before any open there is no epoch to charge (and no job waiting on one).
  if (auto it = per_epoch_.find(stall_epoch_); it != per_epoch_.end()) it->second.stall_ns += ns;
  return ns;
}

void Planner::Maintain() {
  MutexLock lock(&mu_);
  Extend(&lock);
}

uint64_t Planner::MinTailTime() const {
  uint64_t best = kNever;
  for (uint32_t g = 0; g < shape_.ranks; ++g) best = std::min(best, tail_[g] * shape_.ranks + g);
  return best == kNever ? 0 : best;
}

uint64_t Planner::MaxHead() const {
  uint64_t best = 0;
  for (uint64_t h : head_) best = std::max(best, h);
  return best;
}

uint64_t Planner::EffectiveKey(FileId f) const {
  // A file just opened is being read: treat it as needed now.
  if (pinned_.count(f) != 0) return 0;
  return config_.enabled ? NextUse(f) : kNever;
}

uint64_t Planner::NextUse(FileId f) const {
  if (batches_) return batches_->Key(f);
  const uint64_t t = stream_.NextUse(f);
  if (t == kNever && !guess_pos_.empty()) {
    auto it = guess_pos_.find(f);
    if (it != guess_pos_.end()) return kGuessBase + it->second;
  }
  return t;
}

uint64_t Planner::VictimBound(uint64_t key) const {
  return batches_ && key < kBatchUnpinned ? kBatchUnpinned - 1 : key;
}

void Planner::Rekey(FileId f) {
  // Only a resident file has a key to keep (the key may cost a lookup).
  if (resident_.state(f) != ResidentSet::State::kResident) return;
  resident_.Rekey(f, EffectiveKey(f));
}

void Planner::RekeyAll(const std::vector<FileId>& files) {
  for (FileId f : files) Rekey(f);
}

void Planner::Pin(FileId f) {
  if (pins_.empty()) return;
  FileId old = pins_[pin_pos_];
  pins_[pin_pos_] = f;
  pin_pos_ = (pin_pos_ + 1) % pins_.size();
  ++pinned_[f];
  Rekey(f);
  if (old == kNoFile) return;
  auto it = pinned_.find(old);
  if (--it->second == 0) {
    pinned_.erase(it);
    Rekey(old);
  }
}

void Planner::Remember(FileId f) {
  if (opened_ring_.empty()) return;
  FileId old = opened_ring_[opened_pos_];
  opened_ring_[opened_pos_] = f;
  opened_pos_ = (opened_pos_ + 1) % opened_ring_.size();
  ++opened_[f];
  if (old == kNoFile) return;
  auto it = opened_.find(old);
  if (--it->second == 0) opened_.erase(it);
}

void Planner::Consume(uint64_t t, bool held) {
  uint32_t g = static_cast<uint32_t>(t % shape_.ranks);
  uint64_t s = t / shape_.ranks;
  if (stream_.Satisfy(t)) Rekey(stream_.FileAt(t));
  head_[g] = std::max(head_[g], held ? std::min(s, head_[g]) + 1 : s + 1);
  AdvanceTail(g);
  // Readers of one shared stream train in step, so none is further behind
  // another than a loader window and a batch. Their opens of one file at
  // the same moment are often seen as one (inotify merges them), located
  // in the first reader's slot: without this, a reader whose opens were all
  // merged for a while would keep its passed entries as still to come - and
  // their files in the budget - and fall out of reach of its own opens.
  if (shape_.merge_window > 0) {
    const uint64_t bound = shape_.loader_steps + config_.batch_size;
    for (uint32_t h = 0; h < shape_.ranks; ++h) {
      if (h == g || config_.local_ranks[h] != config_.local_ranks[g]) continue;
      if (head_[h] + bound >= head_[g]) continue;
      head_[h] = head_[g] - bound;
      AdvanceTail(h);
    }
  }
  DropPassedEpochs();
}

void Planner::AdvanceTail(uint32_t g) {
  while (tail_[g] < head_[g]) {
    uint64_t t = tail_[g] * shape_.ranks + g;
    if (tail_[g] + shape_.lag_steps < head_[g]) {
      // Too far behind the rank's frontier to still be opened: abandoned.
      if (stream_.Satisfy(t)) Rekey(stream_.FileAt(t));
    } else if (!stream_.Satisfied(t)) {
      // A shared stream: this reader has moved a loader window past the
      // entry, so it would have opened the file by now, and another reader
      // did open it just now - the two opens were seen as one (inotify
      // merges identical events queued back to back).
      const bool merged = tail_[g] + shape_.loader_steps + config_.batch_size < head_[g] &&
                          opened_.count(stream_.FileAt(t)) != 0;
      if (!merged) break;
      if (stream_.Satisfy(t)) Rekey(stream_.FileAt(t));
    }
    ++tail_[g];
  }
}

void Planner::DropPassedEpochs() {
  uint64_t min_tail = *std::min_element(tail_.begin(), tail_.end());
  while (!stream_.empty() && stream_.first_epoch_end() <= min_tail) stream_.DropFront();
}

void Planner::RewindScan(FileId f) {
  if (batches_) {
    uint64_t k = batches_->Key(f);
    if (k >= kBatchUnpinned && k < batch_scan_) batch_scan_ = k;
    return;
  }
  uint64_t t = stream_.NextUse(f);
  if (t != kNever && t < scan_) scan_ = t;
}

void Planner::NoteFirstDeviation(FileId file, uint64_t epoch) {
  Deviation& d = stats_.first_deviation;
  d.open = stats_.opens;
  d.file = file;
  d.epoch = epoch;
  if (!tail_.empty()) {
    // The furthest-behind rank's first entry not opened yet.
    const auto g =
        static_cast<uint32_t>(std::min_element(tail_.begin(), tail_.end()) - tail_.begin());
    for (uint64_t s = tail_[g]; s < stream_.end_step(); ++s) {
      const uint64_t t = s * shape_.ranks + g;
      if (!stream_.Contains(t) || stream_.Satisfied(t) || stream_.FileAt(t) == kNoFile) continue;
      d.expected = stream_.FileAt(t);
      break;
    }
  }
  uint64_t next_epoch = 0, offset = 0;
  const uint64_t next = stream_.NextUse(file);
  if (next != kNever && stream_.Locate(next / shape_.ranks, &next_epoch, &offset)) {
    d.next_epoch = next_epoch;
  }
}

Deviation Planner::FirstDeviation() const {
  MutexLock lock(&mu_);
  return stats_.first_deviation;
}

EpochCounts& Planner::EpochOf(uint64_t t) {
  uint64_t epoch = 0, offset = 0;
  const uint64_t step =
      t != kNever ? t / shape_.ranks : *std::min_element(tail_.begin(), tail_.end());
  if (!stream_.Locate(step, &epoch, &offset)) epoch = t != kNever ? next_epoch_ : stats_.epoch;
  EpochCounts& c = per_epoch_[epoch];
  c.epoch = epoch;
  return c;
}

uint64_t Planner::FileSize(FileId f) const {
  return f < input_.files() ? (*input_.file_size)[f] : 0;
}

std::vector<std::vector<FileId>> Planner::ToFiles(
    const std::vector<std::vector<Index>>& orders) const {
  std::vector<std::vector<FileId>> out(orders.size());
  for (size_t g = 0; g < orders.size(); ++g) {
    out[g].reserve(orders[g].size());
    for (Index i : orders[g]) {
      out[g].push_back(i < input_.file_of_index.size() ? input_.file_of_index[i] : kNoFile);
    }
  }
  return out;
}

PlannerStats Planner::Stats() const {
  MutexLock lock(&mu_);
  PlannerStats s = stats_;
  s.lost = lost_;
  for (const auto& [epoch, counts] : per_epoch_) s.per_epoch.push_back(counts);
  s.resident_bytes = resident_.resident_bytes();
  s.in_flight_bytes = resident_.in_flight_bytes();
  s.resident_files = resident_.resident_files();
  s.in_flight_files = resident_.in_flight_files();
  if (batches_) {
    s.epoch = batches_->current_epoch();
    ComputeBatchLead(&s);
  } else if (config_.enabled) {
    uint64_t epoch, offset;
    uint64_t min_tail = *std::min_element(tail_.begin(), tail_.end());
    s.epoch = stream_.Locate(min_tail, &epoch, &offset) ? epoch : next_epoch_;
    ComputeLead(&s);
  }
  return s;
}

void Planner::ComputeLead(PlannerStats* s) const {
  if (stream_.empty()) return;
  uint64_t reach = stream_.Walk(MinTailTime(), [&](uint64_t, FileId f) {
    mu_.AssertHeld();  // called back here, under mu_
    uint64_t bytes = resident_.ResidentBytes(f);
    if (bytes == kNever) return false;
    ++s->lead_files;
    s->lead_bytes += bytes;
    return true;
  });
  uint64_t min_head = *std::min_element(head_.begin(), head_.end());
  reach /= shape_.ranks;
  s->lead_steps = reach > min_head ? reach - min_head : 0;
}

std::optional<std::vector<FileId>> Planner::FirstEpochLoss() const {
  MutexLock lock(&mu_);
  const uint64_t need = std::min<uint64_t>(kFirstOpens, first_epoch_entries_);
  if (!lost_early_ || need == 0 || first_opens_.size() < need) return std::nullopt;
  return first_opens_;
}

std::vector<RankPosition> Planner::Positions() const {
  MutexLock lock(&mu_);
  std::vector<RankPosition> out;
  for (uint32_t g = 0; g < shape_.ranks; ++g) {
    RankPosition p;
    p.rank = config_.local_ranks[g];
    if (batches_) {
      // Batch mode: the offset counts the candidate batches begun (by all
      // readers of the rank, for a shared stream).
      BatchStream::RankPosition b = batches_->Position(p.rank);
      p.epoch = b.epoch;
      p.offset = b.reads;
    } else if (!stream_.Locate(head_[g], &p.epoch, &p.offset)) {
      p.epoch = next_epoch_;
      p.offset = 0;
    }
    out.push_back(p);
  }
  return out;
}

}  // namespace clairfs::prefetch
