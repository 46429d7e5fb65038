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
// Packs are copied in the order given, except that a pack read before it is
// staged (Prefer: the job, the prefetcher running ahead of it, or a peer
// needs it now) is copied next: staging follows the first epoch's reads.
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

  void Worker();
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
