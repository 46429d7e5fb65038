// FutureStream: the node's merged future read stream over a few materialised
// epochs, with each file's next use.
//
// Time model: the G local ranks advance at about the same rate, so the stream
// interleaves them step by step. A rank's position is a global step s that
// runs across epochs (epoch e covers steps [base(e), base(e) + L(e)), L(e)
// the longest local rank's count that epoch); entry (s, slot g) sits at merged
// time T = s * G + g. A rank with fewer entries in an epoch leaves kNoFile
// slots. Every entry is "open" until it is satisfied (its open was seen, or
// its rank moved past it); NextUse(f) is the earliest open entry of f
// (kNever when none is materialised). Entries of one file are chained, so
// satisfying one moves NextUse in O(occurrences).
//
// Epochs are appended in order and dropped from the front once every entry
// is satisfied; Reset forgets everything (a resync jump). Memory: 13 bytes per
// entry plus 16 per file. Single-thread: the Planner locks around it.
#pragma once

#include <cstdint>
#include <deque>
#include <limits>
#include <vector>

#include "prefetch/planner/planner_config.hpp"

namespace clairfs::prefetch {

inline constexpr uint64_t kNever = std::numeric_limits<uint64_t>::max();

class FutureStream {
 public:
  FutureStream(uint32_t ranks, uint64_t num_files);

  uint32_t ranks() const { return g_; }
  bool empty() const { return epochs_.empty(); }
  uint64_t epoch_count() const { return epochs_.size(); }
  // Epochs materialised: [first_epoch(), last_epoch()]; only when !empty().
  uint64_t first_epoch() const { return epochs_.front().epoch; }
  uint64_t last_epoch() const { return epochs_.back().epoch; }
  // Steps materialised: [begin_step(), end_step()).
  uint64_t begin_step() const { return epochs_.empty() ? next_base_ : epochs_.front().base; }
  uint64_t end_step() const { return next_base_; }
  uint64_t end_time() const { return next_base_ * g_; }
  // One past the first epoch's last step; only when !empty().
  uint64_t first_epoch_end() const { return epochs_.front().base + epochs_.front().steps; }

  // Appends `epoch` (must follow last_epoch(), or start the stream): element
  // g holds slot g's file ids in read order. Files whose NextUse changed are
  // appended to *changed.
  void Append(uint64_t epoch, const std::vector<std::vector<FileId>>& slots,
              std::vector<FileId>* changed);
  // Drops the first epoch; every entry in it must be satisfied.
  void DropFront();
  // Forgets every epoch and sets the next epoch's first step to `base`.
  // Files whose NextUse changed are appended to *changed.
  void Reset(uint64_t base, std::vector<FileId>* changed);

  // Entry access by merged time; `t` must be materialised.
  bool Contains(uint64_t t) const { return !empty() && t >= begin_step() * g_ && t < end_time(); }
  FileId FileAt(uint64_t t) const;
  bool Satisfied(uint64_t t) const;
  uint64_t NextOccurrence(uint64_t t) const;  // next entry of the same file, kNever if none
  // The epoch holding step `s` and the step's offset in it; false if absent.
  bool Locate(uint64_t s, uint64_t* epoch, uint64_t* offset) const;
  // Slot g's entries of a materialised `epoch` (kNoFile for holes); empty
  // when the epoch is not materialised.
  std::vector<std::vector<FileId>> Slots(uint64_t epoch) const;
  // First step of `epoch` if materialised, else kNever.
  uint64_t EpochBase(uint64_t epoch) const;

  // Calls fn(t, file) for every open entry from merged time `from` on, in
  // time order, until fn returns false or the stream ends; returns the merged
  // time where it stopped (end_time() when it ran out).
  template <typename Fn>
  uint64_t Walk(uint64_t from, Fn fn) const {
    for (const Epoch& e : epochs_) {
      uint64_t t0 = e.base * g_;
      uint64_t i = from > t0 ? from - t0 : 0;
      for (; i < e.files.size(); ++i) {
        if (!e.done[i] && !fn(t0 + i, e.files[i])) return t0 + i;
      }
    }
    return end_time();
  }

  // Marks entry `t` satisfied; returns true when NextUse(FileAt(t)) changed.
  bool Satisfy(uint64_t t);

  uint64_t NextUse(FileId f) const { return f < next_use_.size() ? next_use_[f] : kNever; }

 private:
  struct Epoch {
    uint64_t epoch = 0;
    uint64_t base = 0;           // first step
    uint64_t steps = 0;          // L
    std::vector<FileId> files;   // by t - base * G
    std::vector<uint64_t> next;  // next merged time of the same file
    std::vector<uint8_t> done;   // satisfied
  };
  const Epoch* EpochOfTime(uint64_t t, uint64_t* off) const;
  Epoch* EpochOfTime(uint64_t t, uint64_t* off);

  uint32_t g_;
  std::deque<Epoch> epochs_;
  uint64_t next_base_ = 0;
  std::vector<uint64_t> next_use_;  // by file
  std::vector<uint64_t> last_occ_;  // by file: latest materialised entry, for chaining
};

}  // namespace clairfs::prefetch
