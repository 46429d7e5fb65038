#include "fs/dist/stager.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <thread>

#include "base/log.hpp"
#include "base/thread_name.hpp"
#include "partitioner/format/checksum.hpp"
#include "partitioner/format/pack_file.hpp"

namespace clairfs::fs {
namespace {

std::string Mib(uint64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

}  // namespace

Status Stager::PreadExact(int fd, uint64_t offset, size_t size, char* dst,
                          const std::string& name) {
  for (size_t done = 0; done < size;) {
    const ssize_t n = ::pread(fd, dst + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::FromErrno(errno, "read " + name);
    if (n == 0) return Status::Corruption(name + ": pack is shorter than the manifest says");
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

// Reads of a pack not staged yet: from the staged copy once there is one,
// else from the copy being made where it holds the bytes, else from the
// dataset directory, keeping what was read for staging.
class Stager::TeeFile final : public format::RandomAccessFile {
 public:
  TeeFile(Stager* stager, uint32_t p, const format::RandomAccessFile* source)
      : stager_(stager), p_(p), source_(source) {}

  Status ReadExact(uint64_t offset, size_t size, void* dst) const override {
    if (const format::RandomAccessFile* staged = stager_->Staged(p_)) {
      return staged->ReadExact(offset, size, dst);
    }
    PartialCopy* copy = stager_->CopyFor(p_);
    if (copy == nullptr) return source_->ReadExact(offset, size, dst);
    PartialCopy::FillCounts counts;
    Status st = copy->Fill(
        offset, offset + size, static_cast<char*>(dst),
        [this](uint64_t off, size_t n, char* to) {
          stager_->demand_reads_.fetch_add(1, std::memory_order_relaxed);
          Status read = source_->ReadExact(off, n, to);
          stager_->demand_end_ns_.store(stager_->clock_->Now().time_since_epoch().count(),
                                        std::memory_order_relaxed);
          stager_->demand_reads_.fetch_sub(1, std::memory_order_release);
          return read;
        },
        &counts);
    stager_->progress_.bytes_kept += counts.written;
    if (!counts.write_error.ok() && !stager_->closed_[p_].load(std::memory_order_acquire) &&
        !stager_->keep_failure_logged_.exchange(true)) {
      Log(LogLevel::kWarn,
          "staging: a read of " + stager_->manifest_->PackName(p_) +
              " could not be kept for staging (said once): " + counts.write_error.message());
    }
    return st;
  }
  const std::string& name() const override { return source_->name(); }
  void WillNeed(uint64_t offset, size_t size) const override {
    const format::RandomAccessFile* staged = stager_->Staged(p_);
    (staged != nullptr ? staged : source_)->WillNeed(offset, size);
  }
  bool ReadIfCached(uint64_t offset, size_t size, void* dst) const override {
    const format::RandomAccessFile* staged = stager_->Staged(p_);
    return (staged != nullptr ? staged : source_)->ReadIfCached(offset, size, dst);
  }

 private:
  Stager* const stager_;
  const uint32_t p_;
  const format::RandomAccessFile* const source_;
};

Stager::Stager(std::string dataset_dir, std::string local_dir,
               std::shared_ptr<const format::Manifest> manifest, std::vector<uint32_t> partitions,
               unsigned threads, std::chrono::milliseconds log_every, const Clock* clock)
    : dataset_dir_(std::move(dataset_dir)),
      local_dir_(std::move(local_dir)),
      manifest_(std::move(manifest)),
      partitions_(std::move(partitions)),
      threads_(std::max(1u, threads)),
      log_every_(log_every),
      clock_(clock),
      staged_(manifest_->partition_count() + 1),
      owned_(manifest_->partition_count() + 1),
      mine_(manifest_->partition_count() + 1, 0),
      partial_(manifest_->partition_count() + 1),
      tees_(manifest_->partition_count() + 1) {
  const uint32_t n = manifest_->partition_count() + 1;
  for (auto& s : staged_) s.store(nullptr);
  closed_.reset(new std::atomic<bool>[n]);
  tee_of_.reset(new std::atomic<const format::RandomAccessFile*>[n]);
  for (uint32_t p = 0; p < n; ++p) {
    closed_[p].store(false);
    tee_of_[p].store(nullptr);
  }
  units_left_.reset(new std::atomic<uint32_t>[n]);
  for (uint32_t p = 0; p < n; ++p) units_left_[p].store(0);
  for (uint32_t p : partitions_) {
    if (p < n) mine_[p] = 1;
  }
  waiting_.assign(partitions_.begin(), partitions_.end());
  preferred_.reset(new std::atomic<bool>[manifest_->partition_count() + 1]);
  for (uint32_t p = 0; p <= manifest_->partition_count(); ++p) preferred_[p].store(false);
  progress_.packs_total = partitions_.size();
  for (uint32_t p : partitions_) progress_.bytes_total += manifest_->partition(p).pack_bytes;
}

Stager::~Stager() {
  cancel_ = true;
  for (auto& t : workers_) t.join();
  // Copies begun by reads of packs whose staging never came.
  MutexLock lock(&mu_);
  for (int fd : unit_fd_) {
    if (fd >= 0) ::close(fd);
  }
  for (uint32_t p = 0; p < partial_.size(); ++p) {
    if (partial_[p] != nullptr && !closed_[p].load()) ::unlink(partial_[p]->path().c_str());
  }
}

void Stager::Start() {
  start_ = clock_->Now();
  next_log_ns_ = (start_ + log_every_).time_since_epoch().count();
  std::error_code ec;
  std::filesystem::create_directories(local_dir_, ec);
  const unsigned n =
      static_cast<unsigned>(std::min<size_t>(threads_, std::max<size_t>(partitions_.size(), 1)));
  AdoptExisting();
  running_ = n;
  progress_.threads = n;
  for (unsigned i = 0; i < n; ++i) {
    workers_.emplace_back([this] {
      NameThread("clairfs-stage");
      Worker();
    });
  }
}

void Stager::Wait() {
  for (auto& t : workers_) t.join();
  workers_.clear();
}

std::vector<std::string> Stager::errors() const {
  MutexLock lock(&mu_);
  return errors_;
}

void Stager::Prefer(uint32_t p) {
  if (p >= staged_.size() || preferred_[p].exchange(true, std::memory_order_relaxed)) return;
  MutexLock lock(&mu_);
  auto it = std::find(waiting_.begin(), waiting_.end(), p);
  if (it == waiting_.end()) return;  // begun already, or not this rank's
  waiting_.erase(it);
  preferred_waiting_.push_back(p);
}

std::vector<uint32_t> Stager::begun() const {
  MutexLock lock(&mu_);
  return begun_;
}

const format::RandomAccessFile* Stager::Reading(uint32_t p,
                                                const format::RandomAccessFile* source) {
  if (p >= mine_.size() || mine_[p] == 0) return source;
  if (const format::RandomAccessFile* tee = tee_of_[p].load(std::memory_order_acquire)) {
    return tee;
  }
  MutexLock lock(&mu_);
  if (tees_[p] == nullptr) {
    tees_[p] = std::make_unique<TeeFile>(this, p, source);
    tee_of_[p].store(tees_[p].get(), std::memory_order_release);
  }
  return tees_[p].get();
}

Result<PartialCopy*> Stager::Partial(uint32_t p) {
  MutexLock lock(&mu_);
  if (partial_[p] == nullptr) {
    std::error_code ec;  // a read before Start: the directory may not be there yet
    std::filesystem::create_directories(local_dir_, ec);
    auto copy = PartialCopy::Create(local_dir_ + "/." + manifest_->PackName(p) + ".staging");
    if (!copy.ok()) return copy.status();
    partial_[p] = std::move(copy).value();
  }
  return partial_[p].get();
}

PartialCopy* Stager::CopyFor(uint32_t p) {
  if (closed_[p].load(std::memory_order_acquire) || cancel_) return nullptr;
  auto copy = Partial(p);
  if (copy.ok()) return *copy;
  if (!keep_failure_logged_.exchange(true)) {
    Log(LogLevel::kWarn,
        "staging: reads of " + manifest_->PackName(p) +
            " before its staging cannot be kept for it (said once): " + copy.status().message());
  }
  return nullptr;
}

void Stager::Close(uint32_t p, bool copy_in_use) {
  closed_[p].store(true, std::memory_order_release);
  MutexLock lock(&mu_);
  if (partial_[p] == nullptr || copy_in_use) return;  // reads under way may finish from it
  partial_[p]->Disable();
  ::unlink(partial_[p]->path().c_str());
}

void Stager::Worker() {
  std::vector<char> unit_buf;
  for (;;) {
    ReplanIfDue();
    uint32_t p = 0;
    bool verify = false;
    std::optional<StageUnit> unit;
    {
      MutexLock lock(&mu_);
      if (cancel_) break;
      // Packs read before their turn (or whose units are in), then the
      // job's first-use order, then the other packs.
      if (preferred_waiting_.empty() && next_unit_ < units_.size()) unit = units_[next_unit_++];
      std::deque<uint32_t>& from = preferred_waiting_.empty() ? waiting_ : preferred_waiting_;
      if (unit) {
        // copied below
      } else if (!from.empty()) {
        p = from.front();
        from.pop_front();
        begun_.push_back(p);
      } else if (!unverified_.empty()) {
        p = unverified_.front();
        unverified_.pop_front();
        verify = true;
      } else {
        break;
      }
    }
    if (unit) {
      if (unit_buf.empty()) unit_buf.resize(kChunk);
      CopyUnit(*unit, unit_buf.data());
      continue;
    }
    Status st = verify ? VerifyAdopted(p) : StageOne(p);
    if (!st.ok()) {
      progress_.packs_failed++;
      Log(LogLevel::kError, "staging " + manifest_->PackName(p) + " failed, reads of it go to " +
                                dataset_dir_ + ": " + st.message());
      MutexLock lock(&mu_);
      errors_.push_back(manifest_->PackName(p) + ": " + st.message());
    }
    progress_.packs_done++;
  }
  if (--running_ == 0) {
    progress_.seconds = std::chrono::duration<double>(clock_->Now() - start_).count();
    progress_.finished = true;
    Log(LogLevel::kInfo,
        "staging done: " + std::to_string(progress_.packs_done - progress_.packs_failed) + "/" +
            std::to_string(progress_.packs_total) + " packs (" +
            std::to_string(progress_.packs_reused.load()) + " reused, " +
            Mib(progress_.bytes_copied) + " copied" +
            (progress_.first_use_units == 0 ? ""
                                            : ", " + Mib(progress_.bytes_first_use) +
                                                  " of it first, in the job's first-use order") +
            ") in " + std::to_string(progress_.seconds.load()) + " s into " + local_dir_);
  }
}

void Stager::AdoptExisting() {
  std::vector<uint32_t> adopted;
  uint64_t bytes = 0;
  for (uint32_t p : partitions_) {
    struct stat st;
    const std::string path = local_dir_ + "/" + manifest_->PackName(p);
    if (::stat(path.c_str(), &st) != 0) continue;  // absent: copied in its turn
    auto file = format::OpenPack(local_dir_, *manifest_, p);
    if (!file.ok()) {
      Log(LogLevel::kInfo, "staged copy " + path + " cannot be used (" + file.status().message() +
                               "), copying again");
      continue;
    }
    {
      MutexLock lock(&mu_);
      owned_[p] = std::move(file).value();
      staged_[p].store(owned_[p].get(), std::memory_order_release);
      waiting_.erase(std::remove(waiting_.begin(), waiting_.end(), p), waiting_.end());
      unverified_.push_back(p);
    }
    Close(p, /*copy_in_use=*/false);
    adopted.push_back(p);
    bytes += manifest_->partition(p).pack_bytes;
  }
  if (!adopted.empty()) {
    Log(LogLevel::kInfo, "staging: " + std::to_string(adopted.size()) +
                             " pack(s) from an earlier run in use (" + Mib(bytes) +
                             "), each read checked; their checksums are verified after the copies");
  }
}

Status Stager::StageOne(uint32_t p) {
  auto copy = Partial(p);
  bool renamed = false;
  Status st = copy.ok() ? CopyIn(p, *copy, &renamed) : copy.status();
  // Staged first, then closed: a read sees the staged copy or the whole
  // copy being made, never neither.
  Close(p, /*copy_in_use=*/renamed);
  return st;
}

Status Stager::CopyIn(uint32_t p, PartialCopy* copy, bool* renamed) {
  const std::string name = manifest_->PackName(p);
  CLAIRFS_RETURN_IF_ERROR(Copy(p, dataset_dir_ + "/" + name, copy));
  const std::string local = local_dir_ + "/" + name;
  if (::rename(copy->path().c_str(), local.c_str()) != 0) {
    return Status::FromErrno(errno, "rename " + copy->path());
  }
  *renamed = true;
  auto file = format::OpenPack(local_dir_, *manifest_, p);
  if (!file.ok()) return file.status();
  MutexLock lock(&mu_);
  owned_[p] = std::move(file).value();
  staged_[p].store(owned_[p].get(), std::memory_order_release);
  return Status::Ok();
}

Status Stager::VerifyAdopted(uint32_t p) {
  const std::string path = local_dir_ + "/" + manifest_->PackName(p);
  Status v =
      format::VerifyPackChecksum(local_dir_, *manifest_, p, [this] { return cancel_.load(); });
  if (v.ok()) {
    progress_.packs_reused++;
    progress_.bytes_verified += manifest_->partition(p).pack_bytes;
    return v;
  }
  if (cancel_) return Status::Ok();  // stopping: the copy stays as it is
  Log(LogLevel::kWarn, "staged copy " + path + " failed its checksum (" + v.message() +
                           "): its reads go to " + dataset_dir_ + " while it is copied again");
  {
    MutexLock lock(&mu_);
    staged_[p].store(nullptr, std::memory_order_release);
    retired_.push_back(std::move(owned_[p]));
    if (partial_[p] != nullptr) retired_partials_.push_back(std::move(partial_[p]));
    begun_.push_back(p);
  }
  // Reads of p go to the dataset directory meanwhile (closed_: none fills this copy).
  auto copy = Partial(p);
  if (!copy.ok()) return copy.status();
  bool renamed = false;
  Status st = CopyIn(p, *copy, &renamed);
  if (!renamed) ::unlink((*copy)->path().c_str());
  return st;
}

Status Stager::Copy(uint32_t p, const std::string& from, PartialCopy* to) {
  int in = ::open(from.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0 && errno == ENOENT) {
    return Status::NotFound(from + ": partition " + std::to_string(p) +
                            " pack is missing from the dataset directory");
  }
  if (in < 0) return Status::FromErrno(errno, "open " + from);
  const uint64_t size = manifest_->partition(p).pack_bytes;
  struct stat info;
  Status st;
  if (::fstat(in, &info) != 0) {
    st = Status::FromErrno(errno, "stat " + from);
  } else if (static_cast<uint64_t>(info.st_size) != size) {
    st = Status::Corruption(from + ": pack does not match the manifest (size)");
  }
  ::posix_fadvise(in, 0, 0, POSIX_FADV_SEQUENTIAL);
  // In order, a chunk at a time: what the copy lacks and nobody is reading is
  // read from the dataset directory and written into it; what it holds or
  // another read is bringing is taken from it, so the checksum sees every
  // byte in order.
  format::StreamingChecksum sum;
  std::vector<char> buf(kChunk);
  uint64_t copied = 0;
  const auto fetch = [&](uint64_t off, size_t n, char* dst) {
    Status read = PreadExact(in, off, n, dst, from);
    if (read.ok() && source_ != nullptr) source_->Add(p, off, n, SourceRead::kStaging);
    if (read.ok()) bytes_read_ += n;
    return read;
  };
  for (uint64_t off = 0; st.ok() && off < size && !cancel_;) {
    YieldToDemand();
    const uint64_t end = std::min<uint64_t>(size, off + kChunk);
    PartialCopy::FillCounts counts;
    st = to->Fill(off, end, buf.data(), fetch, &counts);
    if (st.ok()) st = counts.write_error;
    if (!st.ok()) break;
    sum.Update(buf.data(), end - off);
    copied += end - off;
    progress_.bytes_copied += end - off;
    MaybeLogProgress();
    off = end;
  }
  ::close(in);
  if (st.ok() && cancel_) st = Status::IOError("staging cancelled", ECANCELED);
  if (st.ok() && sum.Digest() != manifest_->partition(p).pack_checksum) {
    st = Status::Corruption(from + ": pack does not match the manifest (checksum)");
  }
  if (!st.ok()) progress_.bytes_copied -= copied;  // counts only packs in use
  return st;
}

void Stager::YieldToDemand() {
  if (yield_quiet_.count() == 0) return;
  const auto since = clock_->Now();
  for (;;) {
    if (cancel_) break;
    const auto now = clock_->Now();
    const bool reading = demand_reads_.load(std::memory_order_acquire) > 0;
    const int64_t last = demand_end_ns_.load(std::memory_order_relaxed);  // 0: none yet
    if (!reading && (last == 0 || now.time_since_epoch().count() >= last + yield_quiet_.count())) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  progress_.yield_ns += static_cast<uint64_t>((clock_->Now() - since).count());
}

void Stager::MaybeLogProgress() {
  const auto now = clock_->Now();
  int64_t due = next_log_ns_.load(std::memory_order_relaxed);
  if (now.time_since_epoch().count() < due) return;
  const int64_t next = (now + log_every_).time_since_epoch().count();
  if (!next_log_ns_.compare_exchange_strong(due, next, std::memory_order_relaxed)) return;
  const double secs = std::chrono::duration<double>(now - start_).count();
  const uint64_t read = bytes_read_;
  const auto rate = static_cast<uint64_t>(secs > 0 ? static_cast<double>(read) / secs : 0);
  const std::string ahead =
      progress_.first_use_units == 0
          ? ""
          : Mib(progress_.bytes_first_use) + " in the job's first-use order, then ";
  Log(LogLevel::kInfo, "staging: " + ahead + Mib(progress_.bytes_copied) + " of " +
                           Mib(progress_.bytes_total) + " copied, " +
                           std::to_string(progress_.packs_done.load()) + "/" +
                           std::to_string(progress_.packs_total.load()) + " packs done, " +
                           Mib(rate) + "/s read from the dataset directory");
}

}  // namespace clairfs::fs
