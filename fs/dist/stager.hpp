// Stager: copies this rank's packs from the dataset directory (the shared
// file system) to node-local storage, in the background, verifying each copy
// against the manifest's pack checksum.
//
// A pack already in the local directory from an earlier run, with the right
// size and header (OpenPack: the same dataset), is used at Start without
// copying, so a job restarted on the same node reads locally at once: every
// read checks its payload's checksum, and a damaged one is read again from
// the dataset directory. Its whole-pack checksum is verified after the copies
// have begun; a copy that fails it is taken out of use and copied again. A
// copy is written to a temporary name and renamed once verified: a
// half-copied pack is never used. A pack that fails (unreadable or corrupt
// source, full local disk) is logged and left unstaged; reads of it keep going
// to the dataset directory.
//
// While copying it logs its progress (bytes, packs, rate) every `log_every`
// on its Clock, so a long staging shows in the job's log, not only at its end.
//
// When the job's first epoch is known (FirstUse), the bytes it reads are
// copied first, in the order it first reads them, over all of this rank's
// packs (FirstUseUnits); each pack is then finished in its turn: the rest of
// its bytes copied, its checksum taken, the copy put to use. Otherwise, and
// for the packs no rank reads, packs are copied in the order given, except
// that a pack read before it is staged (Prefer: the job, the prefetcher
// running ahead of it, or a peer needs it now) is copied next.
//
// One stream per pack: reads of a pack before it is staged go through
// Reading(p), which answers from the copy being made what staging (or an
// earlier read) wrote into it, reads the rest from the dataset directory and
// writes those bytes into the copy (a PartialCopy); staging then reads only
// what nobody read yet. The pack's checksum is computed in order over the
// copy's bytes, the ones it did not read itself taken back from the local
// copy.
//
// Thread-safe: Staged() is one acquire load; the copy threads are owned and
// joined by the destructor (which cancels copies still running).
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.hpp"
#include "base/mutex.hpp"
#include "fs/dist/first_use.hpp"
#include "fs/dist/partial_copy.hpp"
#include "fs/store/source_reads.hpp"
#include "partitioner/format/file_io.hpp"
#include "partitioner/format/manifest.hpp"

namespace clairfs::fs {

struct StagingProgress {
  std::atomic<uint64_t> packs_total{0}, packs_done{0}, packs_reused{0}, packs_failed{0};
  std::atomic<uint64_t> bytes_total{0}, bytes_copied{0}, bytes_verified{0};
  // Bytes that reads of a pack before it was staged wrote into its copy
  // (staging did not read them from the dataset directory again).
  std::atomic<uint64_t> bytes_kept{0};
  std::atomic<uint64_t> threads{0};  // copying threads started
  std::atomic<bool> finished{false};
  std::atomic<double> seconds{0};
  std::atomic<uint64_t> yield_ns{0};  // copying paused for reads of the job (YieldToReads)
  // FirstUse: the ranges to copy in the job's order, and the bytes copied so.
  std::atomic<uint64_t> first_use_units{0}, bytes_first_use{0};
  // Files of these packs whose first read is known (FirstUse).
  std::atomic<uint64_t> first_use_files{0};
};

class Stager {
 public:
  Stager(std::string dataset_dir, std::string local_dir,
         std::shared_ptr<const format::Manifest> manifest, std::vector<uint32_t> partitions,
         unsigned threads = 2, std::chrono::milliseconds log_every = std::chrono::seconds(30),
         const Clock* clock = &SteadyClock::Instance());
  ~Stager();

  // Counts the copies' reads of the dataset directory in `source` (not
  // owned; outlives this). Call before Start.
  void CountReads(SourceReads* source) { source_ = source; }
  // Copying pauses while a read that cannot wait (the job's, the
  // prefetcher's, a peer's) is reading one of this stager's packs from the
  // dataset directory, and for `quiet` after the last one: the bytes the job
  // needs next go first, staging takes the bandwidth they leave. Zero: no
  // pause. Call before Start.
  void YieldToReads(std::chrono::milliseconds quiet) { yield_quiet_ = quiet; }
  std::chrono::milliseconds yield_quiet() const {
    return std::chrono::duration_cast<std::chrono::milliseconds>(yield_quiet_);
  }
  // The job's first epoch, or what is known of it: the step at which the job
  // first reads each of `files` (manifest nodes; others of this stager's
  // packs are ignored). The ranges of this stager's packs that it reads are
  // copied first, in that order. Callable at any time, as often as more is
  // learned (ClusterOptions::first_use at Start; the job's reported orders
  // later, from this node's ranks and from peers): each call takes the
  // earlier step per file and plans again the packs not begun yet; a range
  // already in its pack's copy is not planned again.
  void FirstUse(const std::vector<FileStep>& files) CLAIRFS_EXCLUDES(steps_mu_, plan_mu_, mu_);
  // The same, planned by a copying thread between two copies: cheap for the
  // caller (the thread that moves the network's messages, the one that reads
  // the job's reports). At most every kReplanEvery, or ten times as long as
  // the last plan took (a manifest of many millions of files), so planning
  // takes a tenth of a thread at most. Nothing is planned once nothing is
  // left to copy.
  void FirstUseLater(const std::vector<FileStep>& files) CLAIRFS_EXCLUDES(steps_mu_);
  static constexpr std::chrono::milliseconds kReplanEvery{500};
  // Starts the copy threads. Call once.
  void Start();
  // Blocks until every pack is staged or has failed.
  void Wait();
  // The verified local copy of partition p, or nullptr if it is not (yet) staged.
  const format::RandomAccessFile* Staged(uint32_t p) const {
    return p < staged_.size() ? staged_[p].load(std::memory_order_acquire) : nullptr;
  }
  const StagingProgress& progress() const { return progress_; }
  // The failures so far, one line each.
  std::vector<std::string> errors() const;
  // Partition p was read before it was staged: copy it next, if it is still
  // waiting its turn. Cheap once per pack.
  void Prefer(uint32_t p);
  // The partitions in the order their copies began.
  std::vector<uint32_t> begun() const;
  // What reads of partition p use until it is staged, given `source`, its
  // pack in the dataset directory (not owned; outlives this): a file that
  // answers from the copy being made what is in it already, and keeps for
  // staging what it reads from `source`. `source` itself when p is not this
  // stager's to stage. The file lives as long as the stager.
  const format::RandomAccessFile* Reading(uint32_t p, const format::RandomAccessFile* source);

 private:
  class TeeFile;

  // Large sequential reads suit parallel file systems; a read of the job that
  // needs bytes of the chunk being copied waits for the whole chunk.
  static constexpr size_t kChunk = 4u << 20;

  // Reads exactly `size` bytes at `offset` of the pack `name` open as `fd`;
  // an end of file before them is a corrupt (short) pack.
  static Status PreadExact(int fd, uint64_t offset, size_t size, char* dst,
                           const std::string& name);

  void Worker();
  // Copies `u` (FirstUse) into its pack's copy through `buf` (kChunk bytes), from a descriptor
  // of the pack in the dataset directory kept while the pack has units left; the pack waits for its
  // turn once its last unit is in. An error leaves the pack's units to its turn, which reports it.
  void CopyUnit(const StageUnit& u, char* buf);
  // The pack's descriptor for its units, opened on first use; -1 when it
  // cannot be opened or does not match the manifest's size.
  int UnitSource(uint32_t p) CLAIRFS_EXCLUDES(mu_);
  // Puts every pack found in the local directory with the right size and
  // header to use, unverified (Start).
  void AdoptExisting();
  Status StageOne(uint32_t p);
  // Copies p into `copy`, renames it into place and puts it to use.
  // `renamed`: the copy is at its final name.
  Status CopyIn(uint32_t p, PartialCopy* copy, bool* renamed);
  // An adopted pack's whole-pack checksum; a copy that fails it is taken out
  // of use (kept open for reads under way) and copied again.
  Status VerifyAdopted(uint32_t p);
  Status Copy(uint32_t p, const std::string& from, PartialCopy* to);
  // The copy being made of p (created on first use, at .NAME.staging).
  Result<PartialCopy*> Partial(uint32_t p) CLAIRFS_EXCLUDES(mu_);
  // The copy reads of p fill while it is not staged, or null once its
  // staging is over (or the copy cannot be made).
  PartialCopy* CopyFor(uint32_t p);
  // p's staging is over (staged, reused, failed): no more Keep, and a copy
  // that was not used is removed.
  void Close(uint32_t p, bool copy_in_use) CLAIRFS_EXCLUDES(mu_);
  // Logs the progress when `log_every` has passed since the last line (one
  // copying thread wins the turn).
  void MaybeLogProgress();
  // Waits while reads of the job are under way or ended less than
  // yield_quiet_ ago (YieldToReads), or until cancelled.
  void YieldToDemand();

  const std::string dataset_dir_, local_dir_;
  const std::shared_ptr<const format::Manifest> manifest_;
  const std::vector<uint32_t> partitions_;
  const unsigned threads_;
  const std::chrono::nanoseconds log_every_;
  const Clock* const clock_;             // not owned
  SourceReads* source_ = nullptr;        // not owned
  std::atomic<int64_t> next_log_ns_{0};  // clock_ time of the next progress line
  std::chrono::nanoseconds yield_quiet_{0};
  // Reads of the dataset directory for TeeFile readers under way, and the
  // clock_ time the last one ended.
  std::atomic<int> demand_reads_{0};
  std::atomic<int64_t> demand_end_ns_{0};
  StagingProgress progress_;
  // Partitions waiting their turn, in order: those read before it first (in
  // the order of their first reads), then the others; those begun, in order.
  // FirstUse's steps so far (per manifest node; empty until the first call),
  // its ranges, the next to copy, and per partition how many are left (not
  // begun or under way) and the descriptor they read from (-2: not open yet).
  // Takes the earlier step per file into first_step_; true if one changed.
  bool Learn(const std::vector<FileStep>& files) CLAIRFS_EXCLUDES(steps_mu_);
  // Plans the packs not begun by first_step_.
  void Replan() CLAIRFS_EXCLUDES(steps_mu_, plan_mu_, mu_);
  // Replan, when FirstUseLater learned something and kReplanEvery has passed.
  void ReplanIfDue() CLAIRFS_EXCLUDES(steps_mu_, plan_mu_, mu_);
  Mutex steps_mu_;  // a leaf
  std::vector<uint64_t> first_step_ CLAIRFS_GUARDED_BY(steps_mu_);
  std::atomic<bool> replan_{false};       // FirstUseLater learned something
  std::atomic<int64_t> next_plan_ns_{0};  // clock_ time before which ReplanIfDue waits
  Mutex plan_mu_;                         // one Replan at a time; taken before mu_
  std::vector<StageUnit> units_ CLAIRFS_GUARDED_BY(mu_);
  size_t next_unit_ CLAIRFS_GUARDED_BY(mu_) = 0;
  std::unique_ptr<std::atomic<uint32_t>[]> units_left_;
  std::vector<int> unit_fd_ CLAIRFS_GUARDED_BY(mu_);
  std::vector<uint8_t> unit_failed_ CLAIRFS_GUARDED_BY(mu_);  // a unit's copy failed: no more
  std::atomic<uint64_t> bytes_read_{0};  // read from the dataset directory by the copies
  std::deque<uint32_t> preferred_waiting_ CLAIRFS_GUARDED_BY(mu_);
  std::deque<uint32_t> waiting_ CLAIRFS_GUARDED_BY(mu_);
  std::vector<uint32_t> begun_ CLAIRFS_GUARDED_BY(mu_);
  // Packs in use from an earlier run, to verify once no copy waits.
  std::deque<uint32_t> unverified_ CLAIRFS_GUARDED_BY(mu_);
  std::unique_ptr<std::atomic<bool>[]> preferred_;  // per partition: Prefer came already
  std::atomic<bool> cancel_{false};
  std::atomic<unsigned> running_{0};
  std::vector<std::atomic<const format::RandomAccessFile*>> staged_;
  mutable Mutex mu_;
  std::vector<std::unique_ptr<format::PosixRandomAccessFile>> owned_ CLAIRFS_GUARDED_BY(mu_);
  std::vector<uint8_t> mine_;  // per partition: this stager's to stage
  std::vector<std::unique_ptr<PartialCopy>> partial_ CLAIRFS_GUARDED_BY(mu_);
  // Copies taken out of use (an adopted pack that failed its checksum): kept
  // open until the end, as reads that loaded them may still use them.
  std::vector<std::unique_ptr<format::PosixRandomAccessFile>> retired_ CLAIRFS_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<PartialCopy>> retired_partials_ CLAIRFS_GUARDED_BY(mu_);
  std::unique_ptr<std::atomic<bool>[]> closed_;  // per partition: staging over
  std::atomic<bool> keep_failure_logged_{false};
  std::vector<std::unique_ptr<TeeFile>> tees_ CLAIRFS_GUARDED_BY(mu_);
  std::unique_ptr<std::atomic<const format::RandomAccessFile*>[]> tee_of_;
  std::vector<std::string> errors_ CLAIRFS_GUARDED_BY(mu_);
  std::vector<std::thread> workers_;
  Clock::TimePoint start_;
};

}  // namespace clairfs::fs
