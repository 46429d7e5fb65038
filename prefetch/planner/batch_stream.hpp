// BatchStream: the node's future when the sampler knows an epoch only as a
// set of batches in unknown order (Sampler::Batches) - which batches each
// local reader still has to read, which it has begun, and each file's
// eviction key.
//
// Readers: one per local training process (PlannerConfig::local_ranks).
// Readers of the same sampler rank (a node-shared stream) share that rank's
// batches, but each reads each batch once and keeps its own state.
//
// Units: an epoch of a rank is its lead batches (read first, in order) and
// its candidate batches, numbered lead first. A reader that enters an epoch
// pins the lead at once; the first open of a file of a candidate it has not
// begun pins that candidate, one of the epoch's `reads`. An open is taken, in
// this order, by (1) the earliest pinned unit of a reader that holds the file
// unopened, (2) a candidate of a reader's current epoch not begun, while the
// reader has reads left (the reader in the earliest epoch, then with the
// fewest reads done, takes it), (3)
// a unit of the epoch after a reader's current one: the reader moves there
// (the one with the most reads done). A reader that has pinned all its reads
// and opened every file of its pins moves to the next epoch once that is
// materialised. Moving on abandons what the reader left unread in the epoch.
//
// Keys (smaller = needed sooner, the scale of ResidentSet's keys):
//   an unopened file of a pinned unit: the pin's sequence number, in [1,
//   kBatchUnpinned): the order in which units were pinned;
//   a unit not begun by a reader at or before its epoch:
//   kBatchUnpinned + (epoch - first epoch) x 2^32 + unit;
// a file's key is the least of its entries', kNever when it has none. Keys
// are whole-unit: walking them fetches whole batches, and eviction (furthest
// first) takes whole batches from the far end.
//
// Memory: 12 bytes per entry of a materialised epoch plus the entries
// themselves. Single-thread: the Planner locks around it.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <vector>

#include "prefetch/planner/future_stream.hpp"
#include "prefetch/planner/planner_config.hpp"

namespace clairfs::prefetch {

inline constexpr uint64_t kBatchUnpinned = uint64_t{1} << 62;

// One rank's epoch as file ids (BatchEpoch after the index -> file id map).
struct BatchUnits {
  std::vector<std::vector<FileId>> lead;
  std::vector<std::vector<FileId>> batches;
  uint64_t reads = 0;
};

class BatchStream {
 public:
  // reader_rank[g]: the sampler rank reader g follows; every reader starts in
  // `first_epoch`.
  BatchStream(const std::vector<uint64_t>& reader_rank, uint64_t first_epoch);

  // The distinct ranks, ascending: Append takes one BatchUnits per rank.
  const std::vector<uint64_t>& ranks() const { return ranks_; }
  bool empty() const { return epochs_.empty(); }
  uint64_t min_reader_epoch() const;  // the furthest-behind reader's epoch
  uint64_t max_reader_epoch() const;
  // Whether `epoch` is materialised.
  bool Has(uint64_t epoch) const;

  // Appends `epoch` (the one after the last, or the first): per_rank[k] for
  // ranks()[k]. Files whose key may have changed go to *changed.
  void Append(uint64_t epoch, std::vector<BatchUnits> per_rank, std::vector<FileId>* changed);
  // Drops epochs every reader has left.
  void DropPassed();

  struct Located {
    bool found = false;
    uint64_t epoch = 0;   // the epoch of the entry the open took
    uint32_t reader = 0;  // the reader it was given to
    bool moved = false;   // some reader moved to a later epoch
    // A candidate this open pinned (its files), or null.
    const std::vector<FileId>* pinned = nullptr;
  };
  // An open of `file`. Files whose key may have changed go to *changed.
  Located Open(FileId file, std::vector<FileId>* changed);

  uint64_t Key(FileId file) const;

  // Calls fn(file) for every unopened file of every pinned unit, in pin
  // order, until fn returns false; returns false when it stopped early.
  template <typename Fn>
  bool WalkPinned(Fn fn) const {
    for (const auto& [seq, pin] : pins_) {
      const std::vector<FileId>& files = UnitOf(pin.epoch, pin.reader, pin.unit);
      for (size_t i = 0; i < files.size(); ++i) {
        if (!pin.opened[i] && !fn(files[i])) return false;
      }
    }
    return true;
  }
  // Calls fn(key, file) for the files of units not begun by some reader at
  // or before their epoch, in key order from key `from` on, until fn returns
  // false; returns the key of the unit it stopped in, or one past the last.
  template <typename Fn>
  uint64_t WalkUnpinned(uint64_t from, Fn fn) const {
    for (const Epoch& e : epochs_) {
      const uint64_t base = UnpinnedBase(e.epoch);
      uint64_t u = from > base ? from - base : 0;
      for (; u < e.max_units; ++u) {
        for (size_t k = 0; k < e.ranks.size(); ++k) {
          if (!Needed(e, k, u)) continue;
          for (FileId f : e.ranks[k].units[u]) {
            if (!fn(base + u, f)) return base + u;
          }
        }
      }
    }
    return epochs_.empty() ? from : UnpinnedBase(epochs_.back().epoch + 1);
  }

  // The readers' remaining work in their current epochs, for stats: calls
  // fn(file) for every entry still to be opened, and whole(files) for each
  // candidate not begun.
  template <typename Entry, typename Whole>
  void WalkCurrent(Entry entry, Whole whole) const {
    for (uint32_t g = 0; g < readers_.size(); ++g) {
      const Epoch* e = Find(readers_[g].epoch);
      if (e == nullptr) continue;
      const RankEpoch& re = e->ranks[readers_[g].rank_slot];
      const std::vector<uint64_t>& state = re.pin_of[readers_[g].index_in_rank];
      for (uint32_t u = 0; u < re.units.size(); ++u) {
        if (state[u] == kDone) continue;
        if (state[u] == kUnpinned) {
          if (u >= re.lead) whole(re.units[u]);
          for (FileId f : re.units[u]) entry(f);
          continue;
        }
        const Pin& pin = pins_.at(state[u]);
        for (size_t i = 0; i < re.units[u].size(); ++i) {
          if (!pin.opened[i]) entry(re.units[u][i]);
        }
      }
    }
  }

  struct ReaderPosition {
    uint64_t epoch = 0;
    uint64_t reads = 0;  // candidates pinned in that epoch
  };
  ReaderPosition Position(uint32_t reader) const;

 private:
  static constexpr uint64_t kUnpinned = 0;  // pin_of: not begun
  static constexpr uint64_t kDone = kNever;  // pin_of: read whole, or abandoned

  struct RankEpoch {
    std::vector<std::vector<FileId>> units;  // lead first
    uint32_t lead = 0;
    uint64_t reads = 0;
    // (file, unit, position in unit), sorted: where a file occurs.
    std::vector<std::tuple<FileId, uint32_t, uint32_t>> by_file;
    // pin_of[i][u]: reader i of this rank's state of unit u - kUnpinned, a
    // pin's sequence number, or kDone.
    std::vector<std::vector<uint64_t>> pin_of;
  };
  struct Epoch {
    uint64_t epoch = 0;
    uint64_t max_units = 0;
    std::vector<RankEpoch> ranks;  // by rank slot
  };
  struct Pin {
    uint32_t reader = 0;
    uint64_t epoch = 0;
    uint32_t unit = 0;
    std::vector<uint8_t> opened;  // by position in the unit
    uint32_t remaining = 0;
  };
  struct Reader {
    uint32_t rank_slot = 0;      // index into ranks_
    uint32_t index_in_rank = 0;  // index into RankEpoch::pin_of
    uint64_t epoch = 0;
    uint64_t reads_done = 0;  // candidates pinned in `epoch`
    uint64_t open_pins = 0;   // pins of `epoch` with files left to open
  };

  uint64_t UnpinnedBase(uint64_t epoch) const;
  const Epoch* Find(uint64_t epoch) const;
  Epoch* Find(uint64_t epoch);
  const std::vector<FileId>& UnitOf(uint64_t epoch, uint32_t reader, uint32_t unit) const;
  // Whether some reader of rank slot k at or before e's epoch has not begun unit u.
  bool Needed(const Epoch& e, size_t k, uint64_t u) const;
  // Opens `file` in a unit reader g (or any reader: kAnyReader) has pinned.
  bool TakePinned(FileId file, uint32_t g, std::vector<FileId>* changed, Located* out);
  // Pins a candidate holding `file` for a reader in its epoch (next = false)
  // or in the epoch after it (next = true, the reader moves there).
  bool PinCandidate(FileId file, bool next, std::vector<FileId>* changed, Located* out);
  void PinUnit(uint32_t g, Epoch& e, uint32_t u, std::vector<FileId>* changed);
  void MoveTo(uint32_t g, uint64_t epoch, std::vector<FileId>* changed);
  // Moves reader g on when it has read its epoch and the next is here.
  bool MoveIfDone(uint32_t g, std::vector<FileId>* changed);

  std::vector<uint64_t> ranks_;  // distinct, ascending
  std::vector<Reader> readers_;
  std::vector<uint32_t> rank_readers_;  // readers per rank slot
  const uint64_t first_epoch_;
  std::deque<Epoch> epochs_;
  std::map<uint64_t, Pin> pins_;  // by sequence number: pin order
  uint64_t next_seq_ = 1;
};

}  // namespace clairfs::prefetch
