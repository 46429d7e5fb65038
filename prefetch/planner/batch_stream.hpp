// BatchStream: the node's future when the sampler knows an epoch only as a
// set of batches in unknown order (Sampler::Batches) - which batch reads are
// still to come, which have begun, and each file's eviction key.
//
// Readers: the local training processes (PlannerConfig::local_ranks).
// Readers of one sampler rank (a node-shared stream) read the same batches,
// each its own order, each batch once an epoch. An open does not say which
// process made it, so the rank's R readers are counted as a pool: in an epoch
// every unit (batch) is read at most R times, and the candidates `reads` x R
// times in all; with one reader per rank this is exact.
//
// Units: an epoch of a rank is its lead batches (read first, in order) and
// its candidate batches, numbered lead first. An open of a file is taken, in
// this order, by (1) a begun read of a unit that has not opened the file yet
// (the earliest begun unit first), (2) a new read of a unit that holds the
// file, in the earliest epoch that has one left: lead units first, candidates
// while the epoch has reads left. (2) with a candidate is what pins a batch.
// An epoch is done when all its reads have begun and every begun read opened
// all its files; it is dropped then, or - with reads left behind (opens the
// daemon never saw) - once a later epoch but one has taken an open.
// Otherwise an open is a deviation. At an epoch boundary, an open by a reader
// already in the next epoch may be counted for the epoch another reader is
// still finishing (and that reader's open for the next): the counts stay
// right per pair of epochs, never a deviation.
//
// Keys (smaller = needed sooner, the scale of ResidentSet's keys):
//   a file not yet opened by a begun read of its unit: the unit's pin
//   sequence number, in [1, kBatchUnpinned): the order units were begun;
//   a unit with reads left in an epoch with reads left (a lead unit: reads
//   left): kBatchUnpinned + (epoch - first epoch) x 2^32 + unit;
// a file's key is the least of its entries', kNever when it has none. Keys
// are whole-unit: walking them fetches whole batches, and eviction (furthest
// first) takes whole batches from the far end.
//
// Alternatives (BatchEpoch::alternative): when an epoch's candidates are
// several alternatives of which one is read, the opens are the evidence. A
// rank with one reader opens a batch's files one after the other, so in the
// alternative being read the epoch's opens fall into runs, each run one
// unit opened whole (the first run seen may have begun before). An
// alternative whose units the opens do not follow that way drops out: its
// units are no longer wanted, and reads begun in them are given back, their
// opens moving to the unit that takes the current open. When the opens fit
// no alternative (an open counted in the wrong epoch), all come back and the
// evidence starts again. Several readers of a rank interleave their batches:
// there every alternative stays.
//
// Memory: about 18 bytes per entry of a materialised epoch. Single-thread:
// the Planner locks around it.
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
  std::vector<uint32_t> alternative;  // BatchEpoch::alternative
};

class BatchStream {
 public:
  // reader_rank[g]: the sampler rank reader g follows. The first epoch
  // appended must be `first_epoch`.
  BatchStream(const std::vector<uint64_t>& reader_rank, uint64_t first_epoch);

  // The distinct ranks, ascending: Append takes one BatchUnits per rank.
  const std::vector<uint64_t>& ranks() const { return ranks_; }
  bool empty() const { return epochs_.empty(); }
  // The earliest epoch with reads not begun, or with files begun reads have
  // not opened while no later epoch took an open (one past the last
  // materialised when there is none).
  uint64_t current_epoch() const;
  // The latest epoch that took an open, or current_epoch() if later.
  uint64_t frontier_epoch() const;

  // `epoch` as Append takes it: per_rank[k] for ranks()[k]. The costly part
  // (indexing every entry); it reads only what construction fixed, so it may
  // run while another thread uses the stream.
  struct Prepared;
  Prepared Prepare(uint64_t epoch, std::vector<BatchUnits> per_rank) const;
  // Appends a prepared epoch (the one after the last, or the first). Files
  // whose key may have changed go to *changed.
  void Append(Prepared epoch, std::vector<FileId>* changed);
  // Drops done epochs, and those left behind (see above); files whose key
  // may have changed go to *changed.
  void DropPassed(std::vector<FileId>* changed);

  struct Located {
    bool found = false;
    uint64_t epoch = 0;  // the epoch of the entry the open took
    // A candidate this open began (its files), or null.
    const std::vector<FileId>* pinned = nullptr;
  };
  // An open of `file`. `repeat`: the file was opened moments ago. If that
  // open was in a batch read still under way, a single reader is opening it
  // twice (a library that does), so this open begins no read in a later
  // epoch; with several readers of the rank it may be another reader's. (A
  // batch's last file opened twice cannot be told from the first file of a
  // next-epoch batch.) Files whose key may have changed go to *changed.
  Located Open(FileId file, bool repeat, std::vector<FileId>* changed);

  uint64_t Key(FileId file) const;

  // Calls fn(file) for every file a begun read has not opened yet, in the
  // order the units were begun, until fn returns false; false when it stopped.
  template <typename Fn>
  bool WalkPinned(Fn fn) const {
    for (const auto& [seq, pin] : pins_) {
      const RankEpoch& re = Find(pin.epoch)->ranks[pin.rank_slot];
      const std::vector<FileId>& files = re.units[pin.unit];
      for (size_t i = 0; i < files.size(); ++i) {
        if (re.opened[pin.unit][i] < re.begun[pin.unit] && !fn(files[i])) return false;
      }
    }
    return true;
  }
  // Calls fn(key, file) for the files of units with reads left, in key order
  // from key `from` on, until fn returns false; returns the key of the unit
  // it stopped in, or one past the last.
  template <typename Fn>
  uint64_t WalkUnpinned(uint64_t from, Fn fn) const {
    for (const Epoch& e : epochs_) {
      const uint64_t base = UnpinnedBase(e.epoch);
      for (uint64_t u = from > base ? from - base : 0; u < e.max_units; ++u) {
        for (const RankEpoch& re : e.ranks) {
          if (!Wanted(re, u)) continue;
          for (FileId f : re.units[u]) {
            if (!fn(base + u, f)) return base + u;
          }
        }
      }
    }
    return epochs_.empty() ? from : UnpinnedBase(epochs_.back().epoch + 1);
  }

  // The current epoch's remaining work, for stats: entry(file) for every
  // file still to be opened by a begun read or by a read left (once per
  // read), whole(files) for each candidate with reads left.
  template <typename Entry, typename Whole>
  void WalkCurrent(Entry entry, Whole whole) const {
    const Epoch* e = Find(current_epoch());
    if (e == nullptr) return;
    for (const RankEpoch& re : e->ranks) {
      for (uint32_t u = 0; u < re.units.size(); ++u) {
        for (size_t i = 0; i < re.units[u].size(); ++i) {
          for (uint32_t n = re.opened[u][i]; n < re.begun[u]; ++n) entry(re.units[u][i]);
        }
        if (!Wanted(re, u)) continue;
        if (u >= re.lead) whole(re.units[u]);
        for (uint32_t n = re.begun[u]; n < re.readers; ++n) {
          for (FileId f : re.units[u]) entry(f);
        }
      }
    }
  }

  // The current epoch, and the candidate reads its readers of `rank` have
  // begun there (together, for a shared stream).
  struct RankPosition {
    uint64_t epoch = 0;
    uint64_t reads = 0;
  };
  RankPosition Position(uint64_t rank) const;

 private:
  struct RankEpoch {
    std::vector<std::vector<FileId>> units;  // lead first
    uint32_t lead = 0;
    uint32_t readers = 0;  // R
    // (file, unit, position in unit), sorted: where a file occurs.
    std::vector<std::tuple<FileId, uint32_t, uint32_t>> by_file;
    std::vector<uint32_t> begun;                // by unit: reads begun
    std::vector<uint64_t> pin;                  // by unit: pin sequence while pending, else 0
    std::vector<std::vector<uint16_t>> opened;  // by unit and position: opens taken
    uint64_t reads_left = 0;                    // candidate reads not begun: R x reads in all
    uint64_t lead_left = 0;                     // lead reads not begun
    uint64_t open_left = 0;                     // files begun reads have not opened
    // Alternatives: by unit (lead units kAnyAlternative), then by
    // alternative whether it is still possible and its current run.
    std::vector<uint32_t> alt;
    std::vector<uint8_t> alive;
    std::vector<uint32_t> run_unit, run_len;
    std::vector<uint8_t> run_first;  // the run may have begun before the evidence
    uint32_t alive_count = 0;
    bool done() const { return reads_left == 0 && lead_left == 0 && open_left == 0; }
  };
  static constexpr uint32_t kAnyAlternative = UINT32_MAX;
  struct Epoch {
    uint64_t epoch = 0;
    uint64_t max_units = 0;
    std::vector<RankEpoch> ranks;  // by rank slot
    bool done() const;
  };
  struct Pin {
    uint64_t epoch = 0;
    uint32_t rank_slot = 0;
    uint32_t unit = 0;
  };

  static bool Wanted(const RankEpoch& re, uint64_t u) {
    return u < re.units.size() && re.begun[u] < re.readers &&
           (u < re.lead || (re.reads_left > 0 && Possible(re, u)));
  }
  static bool Possible(const RankEpoch& re, uint64_t u) {
    return re.alt.empty() || re.alt[u] == kAnyAlternative || re.alive[re.alt[u]] != 0;
  }
  uint64_t UnpinnedBase(uint64_t epoch) const;
  const Epoch* Find(uint64_t epoch) const;
  Epoch* Find(uint64_t epoch);
  // Gives the open to a begun unit (the earliest pinned); taker_ says which.
  bool TakeBegun(FileId file, Located* out);
  // An open `re`'s unit `u` took, as evidence on its alternatives. Those
  // that drop out give back their begun reads (the files they had opened go
  // to *moved); true when that undid this open.
  bool Weigh(RankEpoch& re, uint32_t u, FileId file, std::vector<FileId>* changed,
             std::vector<FileId>* moved);
  // Weigh, then the opens given back and this one (taken by `re`'s unit
  // `u`, or by none: kNoUnit) are taken again.
  void Reconsider(RankEpoch& re, uint32_t u, FileId file, std::vector<FileId>* changed,
                  Located* out);
  static constexpr uint32_t kNoUnit = UINT32_MAX;
  bool BeginRead(FileId file, bool repeat, std::vector<FileId>* changed, Located* out);
  // The earliest epoch in which a begun read still under way has opened
  // `file`, or kNever.
  uint64_t OpenedMidBatch(FileId file) const;
  void Forget(Epoch& e, std::vector<FileId>* changed);
  // Appends each file of `re`'s units once.
  static void AllFiles(const RankEpoch& re, std::vector<FileId>* out);

  // Fixed at construction.
  std::vector<uint64_t> ranks_;    // distinct, ascending
  std::vector<uint32_t> readers_;  // by rank slot: R
  const uint64_t first_epoch_;

  uint64_t touched_ = 0;  // the latest epoch that took an open
  std::deque<Epoch> epochs_;
  std::map<uint64_t, Pin> pins_;  // begun units with files to open, by sequence
  // The unit the last TakeBegun gave an open to.
  RankEpoch* taker_ = nullptr;
  uint32_t taker_unit_ = 0;
  uint64_t next_seq_ = 1;
};

struct BatchStream::Prepared {
  Epoch epoch;
};

}  // namespace clairfs::prefetch
