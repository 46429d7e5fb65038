// PlannerStats: a snapshot of the planner's counters (Planner::Stats()).
//
// Counters are cumulative since the planner was created; the *_bytes/_files
// gauges and the lead are measured at the snapshot. Value type.
//
// The planner counts what it sees and decides: the opens and whether their
// files were resident, the tracking, and its policy's outcomes. What the
// caller does with the plan - the fetches it completes or fails, the bytes it
// moves - the caller counts (in the daemon, the prefetch engine).
#pragma once

#include <cstdint>
#include <vector>

namespace clairfs::prefetch {

// The opens of one epoch (the epoch of the entry an open was located at; an
// open located nowhere counts for the epoch the local ranks are in).
struct EpochCounts {
  uint64_t epoch = 0;
  uint64_t opens = 0;
  uint64_t ready = 0;       // resident at the open
  uint64_t stalls = 0;      // not resident: waited or read on demand
  uint64_t deviations = 0;  // located nowhere
  uint64_t resyncs = 0;     // jumps made while in this epoch (none in batch mode)
  // Waited at its opens and at reads of files that were not ready (counted
  // for the epoch of the latest open seen).
  uint64_t stall_ns = 0;
};

// An open found in no local rank's window, as the planner saw it.
struct Deviation {
  uint64_t open = 0;                 // its number among the opens (1 = the first); 0: none
  uint32_t file = 0;                 // the file opened
  uint64_t epoch = 0;                // the epoch the local ranks were in
  uint32_t expected = UINT32_MAX;    // the furthest-behind rank's next entry's file (none: max)
  uint64_t next_epoch = UINT64_MAX;  // the epoch of the file's next entry, if materialised
};

struct PlannerStats {
  bool enabled = false;  // false: no prediction, reactive caching only
  bool lost = false;     // the last resync failed; the caller caches reactively

  // Opens.
  uint64_t opens = 0;            // every OnOpen
  uint64_t predicted_opens = 0;  // located in a local rank's window (or by a resync)
  uint64_t ready_opens = 0;      // the file was resident at the open
  uint64_t stalled_opens = 0;    // it was not (in flight or absent)
  // Every wait reported: at opens (EndStall/RecordStall) and at reads
  // (RecordReadStall); the longest single one.
  uint64_t stall_ns = 0;
  uint64_t max_stall_ns = 0;
  uint64_t read_stalls = 0;    // reads the RAM cache could not answer at once
  uint64_t read_stall_ns = 0;  // their part of stall_ns

  // Tracking.
  uint64_t repeat_opens = 0;  // a recently opened file opened again (neither)
  // Opens of no predicted entry while the next epoch's order was not known
  // yet (a live source: the job reports it as the epoch starts). Neither.
  uint64_t unreported_opens = 0;
  // Opens that came before their epoch's reported order and were found in it
  // once it arrived: predicted and counted in their epoch, not unreported.
  uint64_t late_opens = 0;
  // Files fetched on a guess at an epoch not reported yet (the guess source),
  // and opens that found one of them resident (its first open after it).
  uint64_t guessed_fetches = 0;
  uint64_t guessed_used = 0;
  uint64_t deviations = 0;              // opens not found in any local rank's window
  uint64_t consecutive_deviations = 0;  // current run of them
  Deviation first_deviation;            // as it was seen (open 0: none yet)
  uint64_t resync_attempts = 0;
  uint64_t resyncs = 0;       // jumps to a new position
  uint64_t epoch = 0;         // epoch of the furthest-behind local rank
  uint64_t order_errors = 0;  // the order source failed for an epoch

  // Batch mode: the epochs are sets of batches in unknown order.
  bool batch_mode = false;
  uint64_t batches_pinned = 0;  // candidate batches begun (by their first open)
  uint64_t batches_ready = 0;   // of those, wholly resident at that open

  // Policy.
  uint64_t fetches_planned = 0;  // files handed out by NextFetches
  // Files the planner told the caller to drop: NextFetches' evict, the
  // victims OnFetched returns, Admit's evict.
  uint64_t evictions = 0;
  uint64_t external_evictions = 0;  // OnEvicted of a file the planner still held
  uint64_t oversize_skips = 0;      // files never planned: larger than the whole budget
  // NextFetches stopped at a full budget while the furthest-behind rank had
  // less lead than its loader's own read-ahead (W x pf batches): the budget
  // is too small for this job.
  uint64_t short_budget_stops = 0;
  uint64_t admissions = 0;  // Admit accepted (reactive caching)
  uint64_t rejections = 0;  // Admit refused

  // Budget, at the snapshot.
  uint64_t budget_bytes = 0;
  uint64_t resident_bytes = 0;
  uint64_t in_flight_bytes = 0;
  uint64_t resident_files = 0;
  uint64_t in_flight_files = 0;
  uint64_t peak_used_bytes = 0;  // max of resident + in flight ever

  // Lead: from the furthest-behind local rank, the upcoming (not yet opened)
  // entries of the merged stream whose files are resident, up to the first
  // that is not. Files and bytes count entries (a file used twice counts
  // twice); steps is how far that reaches past the furthest-behind rank's
  // open frontier, in per-rank entries (compare with W x pf x batch).
  // Batch mode: files and bytes count the resident entries the readers still
  // have to open in their current epochs, and steps the candidate batches
  // not begun there that are wholly resident (summed over readers).
  uint64_t lead_files = 0;
  uint64_t lead_bytes = 0;
  uint64_t lead_steps = 0;

  // By epoch, oldest first (the epochs opens were seen in).
  std::vector<EpochCounts> per_epoch;
};

}  // namespace clairfs::prefetch
