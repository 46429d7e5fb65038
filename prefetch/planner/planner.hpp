// Planner: per node, which file to have in RAM next and which to drop -
// Belady's optimal policy driven by the predicted read order of the node's
// local training ranks.
//
// Model (docs/prefetch.md): the local ranks' per-epoch orders are merged step
// by step into one future stream (FutureStream), two or so epochs at a time,
// generated lazily. Each open the daemon sees is located in a local rank's
// window around its position; that moves the rank forward and retires the
// entry. Opens found nowhere are deviations; once they make up
// deviation_threshold of the last 2 x deviation_threshold opens, the planner
// searches the materialised epochs and a few more for where the recent opens
// are, jumps there (a resync) or declares itself lost (NextFetches stops, the
// caller caches reactively) and keeps trying with exponential backoff.
//
// Policy: NextFetches hands out files in order of next use, evicting the
// resident file whose next use is furthest, and only when that use is later
// than the one being fetched. Resident + in-flight bytes never exceed
// budget_bytes: every byte the planner asks the caller to keep is reserved
// before it is handed out, and OnFetched returns what must go when a file
// turned out larger than reserved.
//
// Batch mode (batch_stream.hpp): when the input's BatchSource gives the start
// epoch as a set of batches in unknown order, the unit is the batch. The first
// open of a batch pins it: NextFetches hands out the unopened files of pinned
// batches before anything else, and no fetch or admission evicts them; the
// candidates not begun follow in a fixed order, whole batches at a time, then
// the next epoch's. An open inside a begun batch is predicted; an open in no
// batch of the epochs being read is a deviation. No resync and no lost state:
// the set of batches is exact, only their order is unknown.
//
// How the daemon calls it:
//   FUSE open of file f:   OpenResult r = OnOpen(f);
//                          if (!r.ready) { wait or read on demand; EndStall(r); }
//                          a demand-read file worth keeping: Admit(f, bytes),
//                          then OnFetched(f, bytes) once its bytes are kept
//   prefetch worker loop:  FetchPlan p = NextFetches(n); drop p.evict;
//                          fetch p.fetch; then OnFetched(f, bytes) (drop what
//                          it returns) or OnFetchFailed(f)
//   cache dropped a file on its own: OnEvicted(f)
//   stats.json:            Stats()
//
// Thread-safety: thread-safe. One mutex guards all state (no other lock is
// taken under it; the order source is called without it). Every call holds it
// for O(local ranks + occurrences of the file) work, except NextFetches
// (O(entries scanned): `max` fetches plus covered entries), the once-per-epoch
// integration of the next epoch (O(entries of one epoch): ~40 ms for ImageNet
// on one 8-rank node), a resync attempt (copies the materialised epochs) and
// Stats (O(lead), ~10 ms there). Generating an epoch's order (the sampler: a
// randperm of the dataset) runs outside the mutex, in NextFetches or Maintain
// (prefetch threads) an epoch ahead of need; OnOpen generates only when a rank
// would otherwise run out of prediction, or to resync. No call blocks on I/O.
// In batch mode an open costs O(materialised epochs x log entries) plus the
// batch it begins; beginning an epoch's last read or dropping an epoch rekeys
// that epoch's resident files (O(entries of one epoch)); an epoch is generated
// and indexed outside the mutex.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "base/clock.hpp"
#include "base/mutex.hpp"
#include "base/status.hpp"
#include "prefetch/planner/batch_stream.hpp"
#include "prefetch/planner/future_stream.hpp"
#include "prefetch/planner/planner_config.hpp"
#include "prefetch/planner/planner_stats.hpp"
#include "prefetch/planner/resident_set.hpp"

namespace clairfs::prefetch {

struct OpenResult {
  bool predicted = false;  // the open was where the order said (or resynced to)
  bool ready = false;      // the file was resident: serve it from RAM
  bool in_flight = false;  // a fetch is under way: wait for it instead of fetching
  Clock::TimePoint at{};   // when the open was seen, for EndStall
};

struct FetchPlan {
  std::vector<FileId> fetch;  // fetch these, soonest use first (bytes already reserved)
  std::vector<FileId> evict;  // drop these from RAM (already no longer counted)
  // The scan stopped at a file no resident file could make room for: opens
  // (which move next uses later) may change that. False when it stopped at
  // `max` or at the end of what is predicted.
  bool room_bound = false;
};

struct Admission {
  bool admitted = false;      // keep it: reserved until OnFetched / OnFetchFailed
  std::vector<FileId> evict;  // drop these first
};

struct RankPosition {
  uint64_t rank = 0;    // global rank id
  uint64_t epoch = 0;   // epoch of the rank's open frontier
  uint64_t offset = 0;  // entries of that epoch already passed by the frontier
};

class Planner {
 public:
  // InvalidArgument for a bad config (see ValidatePlannerConfig); the order
  // source's error when the first epoch cannot be generated. `clock` must
  // outlive the planner.
  static Result<std::unique_ptr<Planner>> Create(PlannerConfig config, PlannerInput input,
                                                 const Clock& clock);

  Planner(const Planner&) = delete;
  Planner& operator=(const Planner&) = delete;

  // An open of `file` (any file id, predicted or not).
  OpenResult OnOpen(FileId file) CLAIRFS_EXCLUDES(mu_);
  // The open `open` (not ready) can now be served: records Now() - open.at.
  void EndStall(const OpenResult& open) CLAIRFS_EXCLUDES(mu_);
  // Records a wait measured by the caller.
  void RecordStall(Clock::Duration waited) CLAIRFS_EXCLUDES(mu_);
  // Records a read of a dataset file that waited (a load from the packs or a
  // peer, or for one under way): the job felt it as much as a wait at an open.
  void RecordReadStall(Clock::Duration waited) CLAIRFS_EXCLUDES(mu_);

  // Up to `max` files to fetch now, in order of next use, with the evictions
  // that make room for them. Empty when disabled or lost.
  FetchPlan NextFetches(size_t max) CLAIRFS_EXCLUDES(mu_);
  // A fetch completed: `file` now holds `bytes` in RAM (also accepted for a
  // file the planner did not plan). Returns files to drop to stay within the
  // budget, possibly `file` itself.
  std::vector<FileId> OnFetched(FileId file, uint64_t bytes) CLAIRFS_EXCLUDES(mu_);
  // A planned fetch failed: the reservation is released; the file is planned
  // again until it failed max_fetch_retries times (reset by its next open).
  void OnFetchFailed(FileId file) CLAIRFS_EXCLUDES(mu_);
  // The cache dropped `file` on its own.
  void OnEvicted(FileId file) CLAIRFS_EXCLUDES(mu_);
  // Whether `file` is counted against the budget (resident or in flight).
  bool Holds(FileId file) const CLAIRFS_EXCLUDES(mu_);

  // The resident file the policy would evict first; nullopt when none.
  std::optional<FileId> Victim() const CLAIRFS_EXCLUDES(mu_);
  // A demand-read `file` of `bytes`: keep it if there is room, or if some
  // resident file is used later than it (or never); with no prediction the
  // oldest files make room.
  Admission Admit(FileId file, uint64_t bytes) CLAIRFS_EXCLUDES(mu_);

  // Generates and integrates the next epoch if it will soon be needed.
  void Maintain() CLAIRFS_EXCLUDES(mu_);

  PlannerStats Stats() const CLAIRFS_EXCLUDES(mu_);
  // The first deviation (open 0: none yet); O(1), unlike Stats().
  Deviation FirstDeviation() const CLAIRFS_EXCLUDES(mu_);
  // The job's first opens the planner sought in its order (repeats left out,
  // oldest first, at most kFirstOpens), once it lost the order in its first
  // epoch - a resync failed before the opens seen outnumbered the node's
  // entries of start_epoch - and has seen kFirstOpens of them (or the whole
  // first epoch, when shorter); nullopt otherwise, and in batch mode. The
  // daemon checks its settings against them (DiagnoseSettings). O(1) but the
  // copy.
  std::optional<std::vector<FileId>> FirstEpochLoss() const CLAIRFS_EXCLUDES(mu_);
  static constexpr size_t kFirstOpens = 64;
  std::vector<RankPosition> Positions() const CLAIRFS_EXCLUDES(mu_);
  const PlannerShape& shape() const { return shape_; }
  const PlannerConfig& config() const { return config_; }
  // Whether the planner runs in batch mode (fixed at Create).
  bool batch_mode() const { return batches_ != nullptr; }

 private:
  Planner(PlannerConfig config, PlannerInput input, PlannerShape shape, const Clock& clock);

  // Every private method but ToFiles expects mu_ held; those handed the
  // caller's lock let it go while the order source runs.
  uint64_t MinTailTime() const CLAIRFS_REQUIRES(mu_);
  uint64_t MaxHead() const CLAIRFS_REQUIRES(mu_);
  uint64_t EffectiveKey(FileId f) const CLAIRFS_REQUIRES(mu_);
  void Rekey(FileId f) CLAIRFS_REQUIRES(mu_);
  void RekeyAll(const std::vector<FileId>& files) CLAIRFS_REQUIRES(mu_);
  void Pin(FileId f) CLAIRFS_REQUIRES(mu_);
  void Remember(FileId f) CLAIRFS_REQUIRES(mu_);  // records an open in the shared stream's memory
  // Marks entry t opened and moves its rank's head past it; `held` (a held
  // open replayed, ReplayHeld) moves the head one step at most: held opens
  // in the epoch's order step it along, and one that only happens to be in
  // the window (a read before the epoch) does not carry it past the epoch's
  // first entries, which would then be abandoned.
  void Consume(uint64_t t, bool held = false) CLAIRFS_REQUIRES(mu_);
  void AdvanceTail(uint32_t slot) CLAIRFS_REQUIRES(mu_);
  void DropPassedEpochs() CLAIRFS_REQUIRES(mu_);
  void RewindScan(FileId f) CLAIRFS_REQUIRES(mu_);
  // Records an open's outcome; true when a resync attempt is due.
  bool NoteOutcome(FileId f, bool located) CLAIRFS_REQUIRES(mu_);
  // Located opens in a row that end a lost state.
  uint64_t RecoveryRun() const CLAIRFS_REQUIRES(mu_);
  // The entry an open of `file` takes: its first unsatisfied one inside its
  // rank's window, or kNever.
  uint64_t Locate(FileId file) const CLAIRFS_REQUIRES(mu_);
  // Records whether an open was a sample opening its file again.
  void NoteReopen(bool reopen) CLAIRFS_REQUIRES(mu_);
  uint64_t FileSize(FileId f) const CLAIRFS_REQUIRES(mu_);
  // The epoch an open belongs to: that of merged time `t`, or (kNever) the
  // epoch the furthest-behind local rank is in.
  EpochCounts& EpochOf(uint64_t t) CLAIRFS_REQUIRES(mu_);
  // Adds a wait to the totals and to the latest open's epoch; returns its ns.
  uint64_t AddStall(Clock::Duration waited) CLAIRFS_REQUIRES(mu_);
  // Keeps the first deviation's details in stats_ (PlannerStats).
  void NoteFirstDeviation(FileId file, uint64_t epoch) CLAIRFS_REQUIRES(mu_);
  // Reads only input_: needs no lock, and runs without it.
  std::vector<std::vector<FileId>> ToFiles(const std::vector<std::vector<Index>>& orders) const;
  void ComputeLead(PlannerStats* s) const CLAIRFS_REQUIRES(mu_);
  // The key victims must exceed for a file with eviction key `key` to make
  // room: in batch mode nothing evicts a pinned batch's files.
  uint64_t VictimBound(uint64_t key) const CLAIRFS_REQUIRES(mu_);
  uint64_t NextUse(FileId f) const CLAIRFS_REQUIRES(mu_);  // the stream's or the batches' key

  // Batch mode (planner_batch.cpp).
  void OnBatchOpen(FileId file, bool repeat, OpenResult* r, MutexLock* lock) CLAIRFS_REQUIRES(mu_);
  void BatchFetches(size_t max, FetchPlan* plan) CLAIRFS_REQUIRES(mu_);
  // Plans `f` (absent) with its victims; false when no room can be made.
  bool PlanBatchFetch(FileId f, FetchPlan* plan) CLAIRFS_REQUIRES(mu_);
  void ExtendBatches(MutexLock* lock) CLAIRFS_REQUIRES(mu_);
  void ComputeBatchLead(PlannerStats* s) const CLAIRFS_REQUIRES(mu_);

  // Extension and resync (planner_resync.cpp).
  // The epoch to generate next, if one is needed; `urgent` only when a
  // rank's window is about to run past what is materialised.
  std::optional<uint64_t> EpochToGenerate(bool urgent = false) const CLAIRFS_REQUIRES(mu_);
  void Extend(MutexLock* lock) CLAIRFS_REQUIRES(mu_);
  // Matches the held opens against the epochs now known (after an Append).
  void ReplayHeld() CLAIRFS_REQUIRES(mu_);
  // An open of `file` that found no entry: true (and counted in the entry's
  // epoch in place of the held open) when the entry a held open of it took is
  // still its latest and inside its rank's window.
  bool TakeReplayed(FileId file, OpenResult* r) CLAIRFS_REQUIRES(mu_);
  // Whether entry t is `file`'s latest consumed one and still inside its
  // rank's window (an open of it now is the same sample's).
  bool InWindow(FileId file, uint64_t t) const CLAIRFS_REQUIRES(mu_);
  // Where a local rank's part of the guess at the pending epoch came from.
  enum class GuessFrom : uint8_t {
    kNothing,  // not asked yet
    kAsked,    // input_.guess asked (its answer, if any, taken)
    kOrder,    // the rank's own order (the others' not there yet)
  };
  // Asks for the parts of the guess at `epoch` that may be new (rank g's
  // order unless `from`[g] is kOrder; input_.guess if never asked), into
  // `slots` (empty: no news) and `from`. True if any part is new. Called
  // without the lock.
  bool GuessPending(uint64_t epoch, std::vector<GuessFrom>* from,
                    std::vector<std::vector<FileId>>* slots) const;
  // Takes a guess at the pending epoch (parts left empty keep the current
  // guess's at that epoch); drops the guess (its files rekeyed).
  void SetGuess(uint64_t epoch, std::vector<GuessFrom> from, std::vector<std::vector<FileId>> slots)
      CLAIRFS_REQUIRES(mu_);
  void DropGuess() CLAIRFS_REQUIRES(mu_);
  // Plans fetches of guessed files into room no known use needs.
  void GuessFetches(size_t max, FetchPlan* plan) CLAIRFS_REQUIRES(mu_);
  void Resync(MutexLock* lock) CLAIRFS_REQUIRES(mu_);
  void Rebase(uint64_t epoch, const std::vector<std::vector<FileId>>& slots,
              const std::vector<std::pair<uint32_t, uint64_t>>& matched) CLAIRFS_REQUIRES(mu_);

  const PlannerConfig config_;
  const PlannerInput input_;
  const PlannerShape shape_;
  const Clock& clock_;

  mutable Mutex mu_;  // guards everything below but batches_; the only lock
  FutureStream stream_ CLAIRFS_GUARDED_BY(mu_);
  ResidentSet resident_ CLAIRFS_GUARDED_BY(mu_);
  // By slot: one past the furthest entry located.
  std::vector<uint64_t> head_ CLAIRFS_GUARDED_BY(mu_);
  // By slot: first entry that may still be opened.
  std::vector<uint64_t> tail_ CLAIRFS_GUARDED_BY(mu_);
  // Batch mode. Not guarded: set once, in Create, before the planner is
  // shared. The BatchStream is used under mu_, except Prepare (in
  // ExtendBatches), which reads only what its constructor fixed.
  std::unique_ptr<BatchStream> batches_;
  // Batch mode's scan_: an unpinned key.
  uint64_t batch_scan_ CLAIRFS_GUARDED_BY(mu_) = kBatchUnpinned;
  uint64_t next_epoch_ CLAIRFS_GUARDED_BY(mu_) = 0;  // the epoch Extend appends next
  uint64_t order_end_ CLAIRFS_GUARDED_BY(mu_) = 0;   // no epoch at or after this is generated
  Status order_error_ CLAIRFS_GUARDED_BY(mu_);       // the order source's last failure
  // The order source said the next epoch is not known yet (Unavailable).
  bool order_pending_ CLAIRFS_GUARDED_BY(mu_) = false;
  // Opens that found no entry while order_pending_: the job reports an epoch
  // as its reading starts, and the report and the opens reach the planner on
  // two threads, so the first opens (all of them, on a busy host) may come
  // first. Each is matched once the order is in (ReplayHeld); one still not
  // found after two appends is left counted as unreported.
  struct HeldOpen {
    FileId file;
    bool ready;
    uint32_t appends;  // epochs appended since it was held
  };
  static constexpr size_t kMaxHeldOpens = size_t{1} << 16;
  std::vector<HeldOpen> held_ CLAIRFS_GUARDED_BY(mu_);
  // The entries held opens took (ReplayHeld), by file, with whether that
  // open found the file ready. A held open may be a read before the epoch
  // (Keras 3 reads a new iterator's first two batches to learn their shape,
  // then reads them again in its first epoch): when the entry's file is
  // opened again while the entry is still in its rank's window, that open is
  // the epoch's and the held one was unreported after all (TakeReplayed).
  struct Replayed {
    uint64_t at;
    bool ready;
  };
  std::unordered_map<FileId, Replayed> replayed_ CLAIRFS_GUARDED_BY(mu_);
  // The guess at the pending epoch guess_epoch_ (kNever: none): each local
  // rank's order once it reported it, else input_.guess's part, the ranks'
  // entries merged by step. A resident guessed file with no
  // known use is keyed kGuessBase + its position: after every known use,
  // before the files nothing needs.
  static constexpr uint64_t kGuessBase = kNever - (uint64_t{1} << 40);
  std::vector<FileId> guess_ CLAIRFS_GUARDED_BY(mu_);
  std::unordered_map<FileId, uint64_t> guess_pos_ CLAIRFS_GUARDED_BY(mu_);
  uint64_t guess_epoch_ CLAIRFS_GUARDED_BY(mu_) = kNever;
  std::vector<std::vector<FileId>> guess_slots_ CLAIRFS_GUARDED_BY(mu_);  // by local rank
  std::vector<GuessFrom> guess_from_ CLAIRFS_GUARDED_BY(mu_);
  uint64_t guess_scan_ CLAIRFS_GUARDED_BY(mu_) = 0;  // GuessFetches resumes here
  // Fetched on the last two guesses and not opened since (an open finding
  // one resident counts guessed_used): a guess is taken as soon as the epoch
  // before it is appended, before that epoch's opens.
  std::unordered_set<FileId> guess_fetched_ CLAIRFS_GUARDED_BY(mu_);
  std::unordered_set<FileId> guess_fetched_before_ CLAIRFS_GUARDED_BY(mu_);
  uint64_t scan_ CLAIRFS_GUARDED_BY(mu_) = 0;  // NextFetches resumes here (merged time)
  // Bumps on every Rebase; stale work is discarded.
  uint64_t rebase_gen_ CLAIRFS_GUARDED_BY(mu_) = 0;
  bool extending_ CLAIRFS_GUARDED_BY(mu_) = false;  // a thread is generating next_epoch_
  bool resyncing_ CLAIRFS_GUARDED_BY(mu_) = false;
  bool lost_ CLAIRFS_GUARDED_BY(mu_) = false;
  bool lost_logged_ CLAIRFS_GUARDED_BY(mu_) = false;  // the warning is said once
  // A resync failed within the first epoch (FirstEpochLoss).
  bool lost_early_ CLAIRFS_GUARDED_BY(mu_) = false;
  // The node's entries of start_epoch (steps x ranks, holes included).
  uint64_t first_epoch_entries_ CLAIRFS_GUARDED_BY(mu_) = 0;
  std::vector<FileId> first_opens_ CLAIRFS_GUARDED_BY(mu_);  // up to kFirstOpens
  uint64_t located_run_ CLAIRFS_GUARDED_BY(mu_) = 0;         // located opens in a row
  // Ring over the last 2 x threshold opens: 1 = deviation.
  std::vector<uint8_t> outcomes_ CLAIRFS_GUARDED_BY(mu_);
  size_t outcome_pos_ CLAIRFS_GUARDED_BY(mu_) = 0;
  uint64_t ring_deviations_ CLAIRFS_GUARDED_BY(mu_) = 0;
  uint64_t devs_since_attempt_ CLAIRFS_GUARDED_BY(mu_) = 0;
  // Attempts in a row that found nothing (backoff).
  uint64_t resync_failures_ CLAIRFS_GUARDED_BY(mu_) = 0;
  uint64_t deep_cursor_ CLAIRFS_GUARDED_BY(mu_) = 0;  // next epoch a resync generates
  // The latest deviating opens, oldest first.
  std::vector<FileId> recent_ CLAIRFS_GUARDED_BY(mu_);
  std::vector<FileId> pins_ CLAIRFS_GUARDED_BY(mu_);  // ring of recently opened files
  size_t pin_pos_ CLAIRFS_GUARDED_BY(mu_) = 0;
  std::unordered_map<FileId, uint32_t> pinned_ CLAIRFS_GUARDED_BY(mu_);
  // A shared stream's memory of the last merge_window opens (ring + counts).
  std::vector<FileId> opened_ring_ CLAIRFS_GUARDED_BY(mu_);
  size_t opened_pos_ CLAIRFS_GUARDED_BY(mu_) = 0;
  std::unordered_map<FileId, uint32_t> opened_ CLAIRFS_GUARDED_BY(mu_);
  std::unordered_map<FileId, uint32_t> failures_ CLAIRFS_GUARDED_BY(mu_);
  // Over the last opens (order mode): 1 where a sample opened its file again.
  std::array<uint8_t, 256> reopen_ring_ CLAIRFS_GUARDED_BY(mu_){};
  size_t reopen_pos_ CLAIRFS_GUARDED_BY(mu_) = 0;
  uint64_t reopens_seen_ CLAIRFS_GUARDED_BY(mu_) = 0;
  // By file: the merged time of the entry its latest located open took
  // (kNever: none). Times only grow, across rebases too.
  std::vector<uint64_t> consumed_at_ CLAIRFS_GUARDED_BY(mu_);
  std::vector<uint8_t> oversize_seen_ CLAIRFS_GUARDED_BY(mu_);
  PlannerStats stats_ CLAIRFS_GUARDED_BY(mu_);
  std::map<uint64_t, EpochCounts> per_epoch_ CLAIRFS_GUARDED_BY(mu_);
  uint64_t stall_epoch_ CLAIRFS_GUARDED_BY(mu_) = 0;  // the latest open's: its waits go there
};

}  // namespace clairfs::prefetch
