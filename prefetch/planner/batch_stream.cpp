#include "prefetch/planner/batch_stream.hpp"

#include <algorithm>
#include <limits>
#include <tuple>

namespace clairfs::prefetch {
namespace {

constexpr uint32_t kAnyReader = std::numeric_limits<uint32_t>::max();
constexpr uint64_t kUnitsPerEpoch = uint64_t{1} << 32;
// Epochs past the first that keep distinct unpinned keys; later ones share
// the last range (still after every pinned key).
constexpr uint64_t kKeyedEpochs = (uint64_t{1} << 29) - 1;

}  // namespace

BatchStream::BatchStream(const std::vector<uint64_t>& reader_rank, uint64_t first_epoch)
    : first_epoch_(first_epoch) {
  ranks_ = reader_rank;
  std::sort(ranks_.begin(), ranks_.end());
  ranks_.erase(std::unique(ranks_.begin(), ranks_.end()), ranks_.end());
  rank_readers_.assign(ranks_.size(), 0);
  for (uint64_t r : reader_rank) {
    Reader reader;
    reader.rank_slot = static_cast<uint32_t>(
        std::lower_bound(ranks_.begin(), ranks_.end(), r) - ranks_.begin());
    reader.index_in_rank = rank_readers_[reader.rank_slot]++;
    reader.epoch = first_epoch;
    readers_.push_back(reader);
  }
}

uint64_t BatchStream::min_reader_epoch() const {
  uint64_t e = kNever;
  for (const Reader& r : readers_) e = std::min(e, r.epoch);
  return e == kNever ? first_epoch_ : e;
}

uint64_t BatchStream::max_reader_epoch() const {
  uint64_t e = first_epoch_;
  for (const Reader& r : readers_) e = std::max(e, r.epoch);
  return e;
}

bool BatchStream::Has(uint64_t epoch) const { return Find(epoch) != nullptr; }

uint64_t BatchStream::UnpinnedBase(uint64_t epoch) const {
  uint64_t rel = epoch > first_epoch_ ? epoch - first_epoch_ : 0;
  return kBatchUnpinned + std::min(rel, kKeyedEpochs) * kUnitsPerEpoch;
}

const BatchStream::Epoch* BatchStream::Find(uint64_t epoch) const {
  if (epochs_.empty() || epoch < epochs_.front().epoch || epoch > epochs_.back().epoch) {
    return nullptr;
  }
  return &epochs_[epoch - epochs_.front().epoch];  // contiguous
}

BatchStream::Epoch* BatchStream::Find(uint64_t epoch) {
  return const_cast<Epoch*>(static_cast<const BatchStream*>(this)->Find(epoch));
}

const std::vector<FileId>& BatchStream::UnitOf(uint64_t epoch, uint32_t reader,
                                               uint32_t unit) const {
  return Find(epoch)->ranks[readers_[reader].rank_slot].units[unit];
}

void BatchStream::Append(uint64_t epoch, std::vector<BatchUnits> per_rank,
                         std::vector<FileId>* changed) {
  Epoch e;
  e.epoch = epoch;
  for (size_t k = 0; k < ranks_.size(); ++k) {
    RankEpoch re;
    BatchUnits& in = per_rank[k];
    re.lead = static_cast<uint32_t>(in.lead.size());
    re.units = std::move(in.lead);
    for (auto& b : in.batches) re.units.push_back(std::move(b));
    re.reads = std::min<uint64_t>(in.reads, re.units.size() - re.lead);
    for (uint32_t u = 0; u < re.units.size(); ++u) {
      for (uint32_t i = 0; i < re.units[u].size(); ++i) {
        re.by_file.emplace_back(re.units[u][i], u, i);
        changed->push_back(re.units[u][i]);
      }
    }
    std::sort(re.by_file.begin(), re.by_file.end());
    re.pin_of.assign(rank_readers_[k], std::vector<uint64_t>(re.units.size(), kUnpinned));
    e.max_units = std::max<uint64_t>(e.max_units, re.units.size());
    e.ranks.push_back(std::move(re));
  }
  epochs_.push_back(std::move(e));
  for (uint32_t g = 0; g < readers_.size(); ++g) {
    if (readers_[g].epoch == epoch) {
      // The readers start here: they pin the lead now.
      Epoch& here = epochs_.back();
      for (uint32_t u = 0; u < here.ranks[readers_[g].rank_slot].lead; ++u) {
        PinUnit(g, here, u, changed);
      }
    }
    while (MoveIfDone(g, changed)) {
    }
  }
}

void BatchStream::DropPassed() {
  const uint64_t min_epoch = min_reader_epoch();
  while (!epochs_.empty() && epochs_.front().epoch < min_epoch) epochs_.pop_front();
}

bool BatchStream::Needed(const Epoch& e, size_t k, uint64_t u) const {
  const RankEpoch& re = e.ranks[k];
  if (u >= re.units.size()) return false;
  for (const Reader& r : readers_) {
    if (r.rank_slot == k && r.epoch <= e.epoch && re.pin_of[r.index_in_rank][u] == kUnpinned) {
      return true;
    }
  }
  return false;
}

uint64_t BatchStream::Key(FileId file) const {
  uint64_t best = kNever;
  const auto lo = std::make_tuple(file, uint32_t{0}, uint32_t{0});
  for (const Epoch& e : epochs_) {
    for (size_t k = 0; k < e.ranks.size(); ++k) {
      const RankEpoch& re = e.ranks[k];
      for (auto it = std::lower_bound(re.by_file.begin(), re.by_file.end(), lo);
           it != re.by_file.end() && std::get<0>(*it) == file; ++it) {
        const auto [f, u, pos] = *it;
        for (const Reader& r : readers_) {
          if (r.rank_slot != k || r.epoch > e.epoch) continue;
          const uint64_t s = re.pin_of[r.index_in_rank][u];
          if (s == kUnpinned) {
            best = std::min(best, UnpinnedBase(e.epoch) + u);
          } else if (s != kDone && !pins_.at(s).opened[pos]) {
            best = std::min(best, s);
          }
        }
      }
    }
  }
  return best;
}

BatchStream::Located BatchStream::Open(FileId file, std::vector<FileId>* changed) {
  Located out;
  if (TakePinned(file, kAnyReader, changed, &out)) return out;
  if (PinCandidate(file, /*next=*/false, changed, &out)) return out;
  PinCandidate(file, /*next=*/true, changed, &out);
  return out;
}

bool BatchStream::TakePinned(FileId file, uint32_t g, std::vector<FileId>* changed,
                             Located* out) {
  // The earliest pin holding the file unopened.
  uint64_t best = kNever;
  uint32_t best_pos = 0;
  const auto lo = std::make_tuple(file, uint32_t{0}, uint32_t{0});
  for (uint32_t r = 0; r < readers_.size(); ++r) {
    if (g != kAnyReader && r != g) continue;
    const Epoch* e = Find(readers_[r].epoch);
    if (e == nullptr) continue;
    const RankEpoch& re = e->ranks[readers_[r].rank_slot];
    for (auto it = std::lower_bound(re.by_file.begin(), re.by_file.end(), lo);
         it != re.by_file.end() && std::get<0>(*it) == file; ++it) {
      const uint64_t s = re.pin_of[readers_[r].index_in_rank][std::get<1>(*it)];
      if (s == kUnpinned || s == kDone || s >= best || pins_.at(s).opened[std::get<2>(*it)]) {
        continue;
      }
      best = s;
      best_pos = std::get<2>(*it);
    }
  }
  if (best == kNever) return false;
  auto pin = pins_.find(best);
  Pin& p = pin->second;
  const uint32_t reader = p.reader;
  out->found = true;
  out->epoch = p.epoch;
  out->reader = reader;
  p.opened[best_pos] = 1;
  changed->push_back(file);
  if (--p.remaining == 0) {
    Find(p.epoch)->ranks[readers_[reader].rank_slot].pin_of[readers_[reader].index_in_rank]
                                                          [p.unit] = kDone;
    pins_.erase(pin);
    --readers_[reader].open_pins;
    if (MoveIfDone(reader, changed)) out->moved = true;
  }
  return true;
}

bool BatchStream::PinCandidate(FileId file, bool next, std::vector<FileId>* changed,
                               Located* out) {
  const auto lo = std::make_tuple(file, uint32_t{0}, uint32_t{0});
  uint32_t chosen = kAnyReader;
  uint32_t unit = 0;
  for (uint32_t r = 0; r < readers_.size(); ++r) {
    const Reader& reader = readers_[r];
    const Epoch* e = Find(reader.epoch + (next ? 1 : 0));
    if (e == nullptr) continue;
    const RankEpoch& re = e->ranks[reader.rank_slot];
    if (!next && reader.reads_done >= re.reads) continue;
    for (auto it = std::lower_bound(re.by_file.begin(), re.by_file.end(), lo);
         it != re.by_file.end() && std::get<0>(*it) == file; ++it) {
      const uint32_t u = std::get<1>(*it);
      if ((!next && u < re.lead) || re.pin_of[reader.index_in_rank][u] != kUnpinned) continue;
      // In its epoch the furthest-behind reader takes it (earliest epoch,
      // then fewest reads); moving on, the one nearest the end of its epoch.
      const Reader& c = readers_[chosen == kAnyReader ? r : chosen];
      const bool better =
          chosen == kAnyReader ||
          (next ? reader.reads_done > c.reads_done
                : std::make_pair(reader.epoch, reader.reads_done) <
                      std::make_pair(c.epoch, c.reads_done));
      if (better) {
        chosen = r;
        unit = u;
      }
      break;
    }
  }
  if (chosen == kAnyReader) return false;
  if (next) {
    MoveTo(chosen, readers_[chosen].epoch + 1, changed);
    out->moved = true;
    if (TakePinned(file, chosen, changed, out)) return true;  // a lead unit
  }
  Epoch& e = *Find(readers_[chosen].epoch);
  PinUnit(chosen, e, unit, changed);
  out->pinned = &e.ranks[readers_[chosen].rank_slot].units[unit];
  const bool moved = out->moved;
  TakePinned(file, chosen, changed, out);
  out->moved = out->moved || moved;
  return true;
}

void BatchStream::PinUnit(uint32_t g, Epoch& e, uint32_t u, std::vector<FileId>* changed) {
  Reader& reader = readers_[g];
  RankEpoch& re = e.ranks[reader.rank_slot];
  if (u >= re.lead) ++reader.reads_done;
  const std::vector<FileId>& files = re.units[u];
  if (files.empty()) {
    re.pin_of[reader.index_in_rank][u] = kDone;
    return;
  }
  const uint64_t seq = next_seq_++;
  Pin pin;
  pin.reader = g;
  pin.epoch = e.epoch;
  pin.unit = u;
  pin.opened.assign(files.size(), 0);
  pin.remaining = static_cast<uint32_t>(files.size());
  pins_.emplace(seq, std::move(pin));
  re.pin_of[reader.index_in_rank][u] = seq;
  ++reader.open_pins;
  changed->insert(changed->end(), files.begin(), files.end());
}

void BatchStream::MoveTo(uint32_t g, uint64_t epoch, std::vector<FileId>* changed) {
  Reader& reader = readers_[g];
  // What the reader left in its epoch is abandoned: its entries no longer
  // count (their files' keys may rise).
  if (Epoch* old = Find(reader.epoch)) {
    RankEpoch& re = old->ranks[reader.rank_slot];
    std::vector<uint64_t>& state = re.pin_of[reader.index_in_rank];
    for (uint32_t u = 0; u < re.units.size(); ++u) {
      if (state[u] == kDone) continue;
      if (state[u] != kUnpinned) pins_.erase(state[u]);
      state[u] = kDone;
      changed->insert(changed->end(), re.units[u].begin(), re.units[u].end());
    }
  }
  reader.epoch = epoch;
  reader.reads_done = 0;
  reader.open_pins = 0;
  if (Epoch* e = Find(epoch)) {
    for (uint32_t u = 0; u < e->ranks[reader.rank_slot].lead; ++u) PinUnit(g, *e, u, changed);
  }
}

bool BatchStream::MoveIfDone(uint32_t g, std::vector<FileId>* changed) {
  const Reader& reader = readers_[g];
  const Epoch* e = Find(reader.epoch);
  if (e == nullptr || !Has(reader.epoch + 1)) return false;
  if (reader.reads_done < e->ranks[reader.rank_slot].reads || reader.open_pins > 0) return false;
  MoveTo(g, reader.epoch + 1, changed);
  return true;
}

BatchStream::ReaderPosition BatchStream::Position(uint32_t reader) const {
  ReaderPosition p;
  if (reader < readers_.size()) {
    p.epoch = readers_[reader].epoch;
    p.reads = readers_[reader].reads_done;
  }
  return p;
}

}  // namespace clairfs::prefetch
