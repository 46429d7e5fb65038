// ResidentSet: which files the planner counts against the RAM budget, and in
// which order they are evicted.
//
// A file is absent, in flight (bytes reserved for a fetch that has not
// completed) or resident. in_flight_bytes() + resident_bytes() never exceed
// the budget: StartFetch and Finish refuse to break that (they return false
// and change nothing). Resident files are ordered by a key - the merged time
// of their next use, kNever when none is known - and, among equal keys, by
// age, so the victim order is "furthest next use first, oldest first among
// files never used again" (Belady with FIFO for the unknown). In-flight files
// are never victims. Single-thread: the Planner locks around it.
#pragma once

#include <cstdint>
#include <set>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "prefetch/planner/planner_config.hpp"

namespace clairfs::prefetch {

class ResidentSet {
 public:
  enum class State : uint8_t { kAbsent, kInFlight, kResident };

  explicit ResidentSet(uint64_t budget) : budget_(budget) {}

  uint64_t budget() const { return budget_; }
  uint64_t used() const { return resident_bytes_ + in_flight_bytes_; }
  uint64_t free() const { return budget_ - used(); }
  uint64_t resident_bytes() const { return resident_bytes_; }
  uint64_t in_flight_bytes() const { return in_flight_bytes_; }
  uint64_t resident_files() const { return order_.size(); }
  uint64_t in_flight_files() const { return held_.size() - order_.size(); }

  State state(FileId f) const;
  uint64_t bytes(FileId f) const;  // held or reserved bytes; 0 when absent
  // Bytes of a resident file; kNever when it is absent or in flight.
  uint64_t ResidentBytes(FileId f) const;

  // Absent -> in flight with `bytes` reserved; false if it does not fit.
  bool StartFetch(FileId f, uint64_t bytes);
  // In flight or absent -> resident with `bytes` and eviction key `key`;
  // false (nothing changes) when the new total would exceed the budget.
  bool Finish(FileId f, uint64_t bytes, uint64_t key);
  // Any state -> absent.
  void Remove(FileId f);
  // New eviction key for a resident file (no-op otherwise).
  void Rekey(FileId f, uint64_t key);

  // Resident files, furthest key first, that would have to go so that
  // `bytes` fit: only files whose key is > `sooner_than` or kNever qualify.
  // Returns false and leaves *victims empty when they cannot free enough.
  // Nothing is removed.
  bool PickVictims(uint64_t bytes, uint64_t sooner_than, std::vector<FileId>* victims) const;
  // The resident file with the furthest key, or kNoFile.
  FileId Furthest() const;

 private:
  struct Held {
    uint64_t bytes = 0;
    uint64_t key = 0;
    uint64_t age = 0;  // larger = older, so it sorts toward eviction
    bool resident = false;
  };
  using Key = std::tuple<uint64_t, uint64_t, FileId>;  // (key, age, file)

  uint64_t budget_;
  uint64_t resident_bytes_ = 0;
  uint64_t in_flight_bytes_ = 0;
  uint64_t age_counter_ = 0;
  std::unordered_map<FileId, Held> held_;
  std::set<Key> order_;  // resident files; the last one is the first victim
};

}  // namespace clairfs::prefetch
