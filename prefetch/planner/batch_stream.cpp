#include "prefetch/planner/batch_stream.hpp"

#include <algorithm>
#include <tuple>

namespace clairfs::prefetch {
namespace {

constexpr uint64_t kUnitsPerEpoch = uint64_t{1} << 32;
// Epochs past the first that keep distinct unpinned keys; later ones share
// the last range (still after every pinned key).
constexpr uint64_t kKeyedEpochs = (uint64_t{1} << 29) - 1;

template <typename ByFile>
auto FirstOf(const ByFile& by_file, FileId file) {
  return std::lower_bound(by_file.begin(), by_file.end(),
                          std::make_tuple(file, uint32_t{0}, uint32_t{0}));
}

}  // namespace

BatchStream::BatchStream(const std::vector<uint64_t>& reader_rank, uint64_t first_epoch)
    : first_epoch_(first_epoch), touched_(first_epoch) {
  ranks_ = reader_rank;
  std::sort(ranks_.begin(), ranks_.end());
  ranks_.erase(std::unique(ranks_.begin(), ranks_.end()), ranks_.end());
  readers_.assign(ranks_.size(), 0);
  for (uint64_t r : reader_rank) {
    ++readers_[std::lower_bound(ranks_.begin(), ranks_.end(), r) - ranks_.begin()];
  }
}

bool BatchStream::Epoch::done() const {
  return std::all_of(ranks.begin(), ranks.end(), [](const RankEpoch& r) { return r.done(); });
}

uint64_t BatchStream::current_epoch() const {
  for (const Epoch& e : epochs_) {
    if (e.done()) continue;
    // Every read begun and a later epoch opened: what is left are opens the
    // daemon may never see (merged inotify events) or a shared reader's last
    // files.
    const bool begun = std::all_of(e.ranks.begin(), e.ranks.end(), [](const RankEpoch& r) {
      return r.reads_left == 0 && r.lead_left == 0;
    });
    if (!begun || touched_ <= e.epoch) return e.epoch;
  }
  return epochs_.empty() ? std::max(first_epoch_, touched_) : epochs_.back().epoch + 1;
}

uint64_t BatchStream::frontier_epoch() const { return std::max(touched_, current_epoch()); }

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

BatchStream::Prepared BatchStream::Prepare(uint64_t epoch, std::vector<BatchUnits> per_rank) const {
  Prepared out;
  Epoch& e = out.epoch;
  e.epoch = epoch;
  for (size_t k = 0; k < ranks_.size(); ++k) {
    RankEpoch re;
    BatchUnits& in = per_rank[k];
    re.readers = readers_[k];
    re.lead = static_cast<uint32_t>(in.lead.size());
    re.units = std::move(in.lead);
    for (auto& b : in.batches) re.units.push_back(std::move(b));
    re.begun.assign(re.units.size(), 0);
    re.pin.assign(re.units.size(), 0);
    uint64_t candidates = 0;
    for (uint32_t u = 0; u < re.units.size(); ++u) {
      // An empty unit (no file the daemon serves) cannot be opened: it
      // counts as read.
      if (re.units[u].empty()) {
        re.begun[u] = re.readers;
      } else if (u < re.lead) {
        re.lead_left += re.readers;
      } else {
        ++candidates;
      }
      re.opened.emplace_back(re.units[u].size(), 0);
      for (uint32_t i = 0; i < re.units[u].size(); ++i) {
        re.by_file.emplace_back(re.units[u][i], u, i);
      }
    }
    re.reads_left = std::min<uint64_t>(in.reads, candidates) * re.readers;
    const std::vector<uint32_t>& alt = in.alternative;
    const uint32_t alternatives = alt.empty() ? 1 : 1 + *std::max_element(alt.begin(), alt.end());
    if (alternatives > 1 && alt.size() + re.lead == re.units.size()) {
      re.alt.assign(re.lead, kAnyAlternative);
      re.alt.insert(re.alt.end(), alt.begin(), alt.end());
      re.alive.assign(alternatives, 1);
      re.alive_count = alternatives;
      re.run_unit.assign(alternatives, 0);
      re.run_len.assign(alternatives, 0);
      re.run_first.assign(alternatives, 1);
    }
    std::sort(re.by_file.begin(), re.by_file.end());
    e.max_units = std::max<uint64_t>(e.max_units, re.units.size());
    e.ranks.push_back(std::move(re));
  }
  return out;
}

void BatchStream::Append(Prepared prepared, std::vector<FileId>* changed) {
  for (const RankEpoch& re : prepared.epoch.ranks) AllFiles(re, changed);
  epochs_.push_back(std::move(prepared.epoch));
}

void BatchStream::AllFiles(const RankEpoch& re, std::vector<FileId>* out) {
  // by_file is sorted by file: each file once, however many units hold it.
  for (size_t i = 0; i < re.by_file.size(); ++i) {
    const FileId f = std::get<0>(re.by_file[i]);
    if (i == 0 || f != std::get<0>(re.by_file[i - 1])) out->push_back(f);
  }
}

void BatchStream::Forget(Epoch& e, std::vector<FileId>* changed) {
  for (RankEpoch& re : e.ranks) {
    for (uint32_t u = 0; u < re.units.size(); ++u) {
      if (re.pin[u] != 0) pins_.erase(re.pin[u]);
    }
    AllFiles(re, changed);
  }
}

void BatchStream::DropPassed(std::vector<FileId>* changed) {
  while (!epochs_.empty()) {
    Epoch& front = epochs_.front();
    if (!front.done()) {
      // Reads left behind (opens never seen) stop counting once the readers
      // are an epoch past it.
      if (front.epoch + 1 >= touched_) return;
      Forget(front, changed);
    }
    epochs_.pop_front();
  }
}

uint64_t BatchStream::Key(FileId file) const {
  uint64_t best = kNever;
  for (const Epoch& e : epochs_) {
    for (const RankEpoch& re : e.ranks) {
      for (auto it = FirstOf(re.by_file, file); it != re.by_file.end() && std::get<0>(*it) == file;
           ++it) {
        const auto [f, u, pos] = *it;
        if (re.opened[u][pos] < re.begun[u]) {
          best = std::min(best, re.pin[u]);
        } else if (Wanted(re, u)) {
          best = std::min(best, UnpinnedBase(e.epoch) + u);
        }
      }
    }
  }
  return best;
}

BatchStream::Located BatchStream::Open(FileId file, bool repeat, std::vector<FileId>* changed) {
  Located out;
  if (!TakeBegun(file, &out)) BeginRead(file, repeat, changed, &out);
  if (!repeat) {
    if (out.found) {
      if (!taker_->alt.empty() && taker_->readers == 1 && taker_unit_ >= taker_->lead) {
        Reconsider(*taker_, taker_unit_, file, changed, &out);
      }
    } else if (!pins_.empty()) {
      // Not in the batch being read nor in a read left: the batch may have
      // been pinned in the wrong alternative.
      const Pin& last = pins_.rbegin()->second;
      RankEpoch& re = Find(last.epoch)->ranks[last.rank_slot];
      if (!re.alt.empty() && re.readers == 1) Reconsider(re, kNoUnit, file, changed, &out);
    }
  }
  if (out.found) touched_ = std::max(touched_, out.epoch);
  return out;
}

void BatchStream::Reconsider(RankEpoch& re, uint32_t u, FileId file, std::vector<FileId>* changed,
                             Located* out) {
  std::vector<FileId> moved;
  const bool undone = Weigh(re, u, file, changed, &moved);
  // The opens of the reads given back are taken again by the alternatives
  // left; then this one, unless it kept its place.
  for (FileId f : moved) {
    Located again;
    if (f != file && !TakeBegun(f, &again)) BeginRead(f, false, changed, &again);
  }
  if (undone || !out->found) {
    *out = Located();
    if (!TakeBegun(file, out)) BeginRead(file, false, changed, out);
  }
}

bool BatchStream::Weigh(RankEpoch& re, uint32_t u, FileId file, std::vector<FileId>* changed,
                        std::vector<FileId>* moved) {
  const uint32_t n = static_cast<uint32_t>(re.alive.size());
  constexpr uint32_t kNone = UINT32_MAX;
  std::vector<uint32_t> unit_of(n, kNone);
  for (auto it = FirstOf(re.by_file, file); it != re.by_file.end() && std::get<0>(*it) == file;
       ++it) {
    const uint32_t v = std::get<1>(*it);
    if (re.alt[v] != kAnyAlternative) unit_of[re.alt[v]] = v;
  }
  // Each live alternative's run after this open, or kNone where it breaks.
  std::vector<uint32_t> len(n, kNone);
  uint32_t fits = 0;
  for (uint32_t a = 0; a < n; ++a) {
    const uint32_t v = unit_of[a];
    if (re.alive[a] == 0 || v == kNone) continue;
    const uint32_t run = re.run_len[a];
    if (run > 0 && v == re.run_unit[a]) {
      if (run < re.units[v].size()) len[a] = run + 1;
    } else if (run == 0 || re.run_first[a] != 0 || run == re.units[re.run_unit[a]].size()) {
      len[a] = 1;
    }
    fits += len[a] != kNone;
  }
  if (fits < re.alive_count) AllFiles(re, changed);  // units stop or start being wanted
  if (fits == 0) {
    // No alternative explains the opens: all come back, the evidence restarts.
    re.alive.assign(n, 1);
    re.alive_count = n;
    for (uint32_t a = 0; a < n; ++a) {
      re.run_unit[a] = unit_of[a] == kNone ? 0 : unit_of[a];
      re.run_len[a] = unit_of[a] == kNone ? 0 : 1;
      re.run_first[a] = 1;
    }
    return false;
  }
  for (uint32_t a = 0; a < n; ++a) {
    if (re.alive[a] == 0) continue;
    if (len[a] != kNone) {
      if (len[a] == 1 && re.run_len[a] > 0) re.run_first[a] = 0;
      re.run_unit[a] = unit_of[a];
      re.run_len[a] = len[a];
      continue;
    }
    re.alive[a] = 0;
    --re.alive_count;
  }
  // Reads begun in units of dropped alternatives are given back.
  bool undone = false;
  for (uint32_t v = re.lead; v < re.units.size(); ++v) {
    if (re.begun[v] == 0 || Possible(re, v)) continue;
    undone |= v == u;
    re.reads_left += re.begun[v];
    for (size_t i = 0; i < re.units[v].size(); ++i) {
      if (re.opened[v][i] > 0) moved->push_back(re.units[v][i]);
      re.open_left -= re.begun[v] - re.opened[v][i];
      re.opened[v][i] = 0;
    }
    re.begun[v] = 0;
    if (re.pin[v] != 0) {
      pins_.erase(re.pin[v]);
      re.pin[v] = 0;
    }
  }
  return undone;
}

bool BatchStream::TakeBegun(FileId file, Located* out) {
  // The earliest begun unit that has not opened the file as often as it was begun.
  RankEpoch* best = nullptr;
  uint32_t best_u = 0, best_pos = 0;
  for (Epoch& e : epochs_) {
    for (RankEpoch& re : e.ranks) {
      for (auto it = FirstOf(re.by_file, file); it != re.by_file.end() && std::get<0>(*it) == file;
           ++it) {
        const auto [f, u, pos] = *it;
        if (re.opened[u][pos] >= re.begun[u]) continue;
        if (best == nullptr || re.pin[u] < best->pin[best_u]) {
          best = &re;
          best_u = u;
          best_pos = pos;
          out->epoch = e.epoch;
        }
      }
    }
  }
  if (best == nullptr) return false;
  out->found = true;
  taker_ = best;
  taker_unit_ = best_u;
  ++best->opened[best_u][best_pos];
  --best->open_left;
  const std::vector<uint16_t>& opened = best->opened[best_u];
  const uint32_t begun = best->begun[best_u];
  if (std::all_of(opened.begin(), opened.end(), [&](uint16_t n) { return n >= begun; })) {
    pins_.erase(best->pin[best_u]);
    best->pin[best_u] = 0;
  }
  return true;
}

uint64_t BatchStream::OpenedMidBatch(FileId file) const {
  for (const Epoch& e : epochs_) {
    for (const RankEpoch& re : e.ranks) {
      for (auto it = FirstOf(re.by_file, file); it != re.by_file.end() && std::get<0>(*it) == file;
           ++it) {
        const auto [f, u, pos] = *it;
        if (re.pin[u] != 0 && re.opened[u][pos] > 0) return e.epoch;
      }
    }
  }
  return kNever;
}

bool BatchStream::BeginRead(FileId file, bool repeat, std::vector<FileId>* changed, Located* out) {
  // Opened again in the middle of its batch: no later epoch begins with it.
  const uint64_t mid_batch = repeat ? OpenedMidBatch(file) : kNever;
  for (Epoch& e : epochs_) {
    // Lead units before candidates: the lowest unit number that wants a read.
    RankEpoch* best = nullptr;
    uint32_t best_u = 0;
    for (RankEpoch& re : e.ranks) {
      for (auto it = FirstOf(re.by_file, file); it != re.by_file.end() && std::get<0>(*it) == file;
           ++it) {
        const uint32_t u = std::get<1>(*it);
        const bool fits = Wanted(re, u) && (e.epoch <= mid_batch || re.readers > 1);
        if (fits && (best == nullptr || u < best_u)) {
          best = &re;
          best_u = u;
        }
        if (fits) break;
      }
    }
    if (best == nullptr) continue;
    RankEpoch& re = *best;
    ++re.begun[best_u];
    re.open_left += re.units[best_u].size();
    if (best_u < re.lead) {
      --re.lead_left;
    } else {
      out->pinned = &re.units[best_u];
      if (--re.reads_left == 0) {
        // The epoch's last read began: the candidates not begun drop out
        // (with alternatives, many units share each file: each file once).
        if (!re.alt.empty()) {
          AllFiles(re, changed);
        } else {
          for (uint32_t u = re.lead; u < re.units.size(); ++u) {
            if (re.begun[u] < re.readers) {
              changed->insert(changed->end(), re.units[u].begin(), re.units[u].end());
            }
          }
        }
      }
    }
    if (re.pin[best_u] == 0) {
      re.pin[best_u] = next_seq_++;
      pins_.emplace(re.pin[best_u],
                    Pin{e.epoch, static_cast<uint32_t>(best - e.ranks.data()), best_u});
    }
    changed->insert(changed->end(), re.units[best_u].begin(), re.units[best_u].end());
    return TakeBegun(file, out);
  }
  return false;
}

BatchStream::RankPosition BatchStream::Position(uint64_t rank) const {
  RankPosition p;
  p.epoch = current_epoch();
  const Epoch* e = Find(p.epoch);
  auto slot = std::lower_bound(ranks_.begin(), ranks_.end(), rank);
  if (e == nullptr || slot == ranks_.end() || *slot != rank) return p;
  const RankEpoch& re = e->ranks[slot - ranks_.begin()];
  for (uint32_t u = re.lead; u < re.units.size(); ++u) p.reads += re.begun[u];
  return p;
}

}  // namespace clairfs::prefetch
