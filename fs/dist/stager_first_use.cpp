// The first-use plan of a Stager: what the job's first reads say to copy
// first (Learn, Replan), and the copying of those ranges (CopyUnit). The
// packs' copying in their turn, and the reads of packs not staged yet, are
// in stager.cpp.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "base/log.hpp"
#include "fs/dist/stager.hpp"

namespace clairfs::fs {

bool Stager::Learn(const std::vector<FileStep>& files) {
  const uint32_t n = manifest_->partition_count() + 1;
  bool changed = false;
  MutexLock lock(&steps_mu_);
  for (const FileStep& f : files) {
    if (f.node >= manifest_->node_count() || f.step == UINT64_MAX) continue;
    const uint32_t p = manifest_->node(f.node).partition;
    if (p >= n || mine_[p] == 0) continue;
    if (first_step_.empty()) first_step_.assign(manifest_->node_count(), UINT64_MAX);
    if (f.step < first_step_[f.node]) {
      if (first_step_[f.node] == UINT64_MAX) progress_.first_use_files++;
      first_step_[f.node] = f.step;
      changed = true;
    }
  }
  return changed;
}

void Stager::FirstUse(const std::vector<FileStep>& files) {
  if (Learn(files)) Replan();
}

void Stager::FirstUseLater(const std::vector<FileStep>& files) {
  if (Learn(files)) replan_.store(true, std::memory_order_release);
}

void Stager::ReplanIfDue() {
  if (!replan_.load(std::memory_order_acquire)) return;
  int64_t due = next_plan_ns_.load(std::memory_order_relaxed);
  const auto now = clock_->Now();
  if (now.time_since_epoch().count() < due) return;
  const int64_t next = (now + kReplanEvery).time_since_epoch().count();
  if (!next_plan_ns_.compare_exchange_strong(due, next, std::memory_order_relaxed)) return;
  replan_.store(false, std::memory_order_relaxed);
  const auto t0 = std::chrono::steady_clock::now();
  Replan();
  const auto took = std::chrono::steady_clock::now() - t0;
  if (10 * took > kReplanEvery) next_plan_ns_.fetch_add((10 * took - kReplanEvery).count());
}

void Stager::Replan() {
  MutexLock plan(&plan_mu_);
  const uint32_t n = manifest_->partition_count() + 1;
  std::vector<uint64_t> step;
  {
    MutexLock lock(&steps_mu_);
    step = first_step_;
  }
  // The packs still to plan: not begun (waiting their turn, or next since
  // the job read them: the plan says which of their bytes it reads when),
  // or with units left. Their units are made again without mu_ (a large
  // manifest takes a while), then put in place of those not begun yet.
  std::vector<uint32_t> open;
  {
    MutexLock lock(&mu_);
    if (cancel_) return;
    if (unit_fd_.empty()) {
      unit_fd_.assign(n, -2);
      unit_failed_.assign(n, 0);
    }
    std::vector<uint8_t> waits(n, 0);
    for (uint32_t p : waiting_) waits[p] = 1;
    for (uint32_t p : preferred_waiting_) waits[p] = 1;
    for (uint32_t p : partitions_) {
      if (waits[p] != 0 || units_left_[p].load() > 0) open.push_back(p);
    }
  }
  std::vector<StageUnit> made = FirstUseUnits(*manifest_, open, step, kChunk);
  MutexLock lock(&mu_);
  // A pack begun or read meanwhile left the set; a range its copy holds
  // already is not copied again.
  std::vector<uint8_t> still(n, 0);
  for (uint32_t p : waiting_) still[p] = 1;
  for (uint32_t p : preferred_waiting_) still[p] = 1;
  for (uint32_t p : open) still[p] |= units_left_[p].load() > 0 ? 1 : 0;
  size_t kept = 0;
  for (const StageUnit& u : made) {
    const PartialCopy* copy = partial_[u.partition].get();
    if (still[u.partition] == 0 || (copy != nullptr && copy->Holds(u.offset, u.offset + u.size))) {
      continue;
    }
    made[kept++] = u;
  }
  made.resize(kept);
  // The units not begun give way to the new ones; those under way stay counted.
  std::vector<int64_t> delta(n, 0);
  for (size_t i = next_unit_; i < units_.size(); ++i) delta[units_[i].partition]--;
  for (const StageUnit& u : made) delta[u.partition]++;
  const uint64_t dropped = units_.size() - next_unit_;
  progress_.first_use_units += made.size();
  progress_.first_use_units -= dropped;
  units_ = std::move(made);
  next_unit_ = 0;
  for (uint32_t p : open) {
    if (delta[p] == 0) continue;
    const uint32_t before = units_left_[p].load();
    units_left_[p].fetch_add(static_cast<uint32_t>(delta[p]));
    if (before == 0) {
      // A pack waiting its turn: it waits for its units now (CopyUnit).
      waiting_.erase(std::remove(waiting_.begin(), waiting_.end(), p), waiting_.end());
      preferred_waiting_.erase(std::remove(preferred_waiting_.begin(), preferred_waiting_.end(), p),
                               preferred_waiting_.end());
    } else if (static_cast<int64_t>(before) + delta[p] == 0) {
      // Its units all went (none under way): its turn comes now.
      if (unit_fd_[p] >= 0) ::close(unit_fd_[p]);
      unit_fd_[p] = -1;
      if (!closed_[p].load(std::memory_order_acquire)) preferred_waiting_.push_back(p);
    }
  }
}

int Stager::UnitSource(uint32_t p) {
  MutexLock lock(&mu_);
  if (unit_failed_[p] != 0) return -1;
  if (unit_fd_[p] != -2) return unit_fd_[p];
  const std::string from = dataset_dir_ + "/" + manifest_->PackName(p);
  int fd = ::open(from.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat info;
  if (fd >= 0 && (::fstat(fd, &info) != 0 ||
                  static_cast<uint64_t>(info.st_size) != manifest_->partition(p).pack_bytes)) {
    ::close(fd);
    fd = -1;  // its turn says what is wrong
  }
  // The job's order, not the pack's: the kernel's read-ahead would bring
  // bytes needed later.
  if (fd >= 0) ::posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
  unit_fd_[p] = fd;
  return fd;
}

void Stager::CopyUnit(const StageUnit& u, char* buf) {
  const uint32_t p = u.partition;
  const int fd = closed_[p].load(std::memory_order_acquire) ? -1 : UnitSource(p);
  PartialCopy* copy = fd >= 0 ? CopyFor(p) : nullptr;
  if (copy != nullptr) {
    const std::string from = dataset_dir_ + "/" + manifest_->PackName(p);
    PartialCopy::FillCounts counts;
    // Only what the job's reads are not bringing already: staging passes
    // over the ranges they got to first, to the ones ahead of them.
    Status st = copy->Keep(
        u.offset, u.offset + u.size, buf,
        [&](uint64_t off, size_t n, char* dst) {
          YieldToDemand();
          Status read = PreadExact(fd, off, n, dst, from);
          if (read.ok()) {
            if (source_ != nullptr) source_->Add(p, off, n, SourceRead::kStaging);
            bytes_read_ += n;
          }
          return read;
        },
        &counts);
    progress_.bytes_first_use += counts.written;
    if (!st.ok()) {
      Log(LogLevel::kInfo, "staging: copying " + manifest_->PackName(p) +
                               " in the job's order failed (" + st.message() +
                               "); the rest of it is copied in its turn");
      MutexLock lock(&mu_);
      unit_failed_[p] = 1;  // `fd` itself is closed with the last unit
    }
    MaybeLogProgress();
  }
  if (units_left_[p].fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  MutexLock lock(&mu_);
  if (unit_fd_[p] >= 0) ::close(unit_fd_[p]);
  unit_fd_[p] = -1;
  if (!closed_[p].load(std::memory_order_acquire)) preferred_waiting_.push_back(p);
}

}  // namespace clairfs::fs
