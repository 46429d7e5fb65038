#include "fs/dist/stager.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "base/log.hpp"
#include "base/thread_name.hpp"
#include "partitioner/format/checksum.hpp"
#include "partitioner/format/pack_file.hpp"

namespace clairfs::fs {
namespace {

constexpr size_t kChunk = 8u << 20;  // large sequential reads suit parallel file systems

std::string Mib(uint64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

}  // namespace

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
      owned_(manifest_->partition_count() + 1) {
  for (auto& s : staged_) s.store(nullptr);
  waiting_.assign(partitions_.begin(), partitions_.end());
  preferred_.reset(new std::atomic<bool>[manifest_->partition_count() + 1]);
  for (uint32_t p = 0; p <= manifest_->partition_count(); ++p) preferred_[p].store(false);
  progress_.packs_total = partitions_.size();
  for (uint32_t p : partitions_) progress_.bytes_total += manifest_->partition(p).pack_bytes;
}

Stager::~Stager() {
  cancel_ = true;
  for (auto& t : workers_) t.join();
}

void Stager::Start() {
  start_ = clock_->Now();
  next_log_ns_ = (start_ + log_every_).time_since_epoch().count();
  std::error_code ec;
  std::filesystem::create_directories(local_dir_, ec);
  const unsigned n =
      static_cast<unsigned>(std::min<size_t>(threads_, std::max<size_t>(partitions_.size(), 1)));
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

void Stager::Worker() {
  for (;;) {
    uint32_t p;
    {
      MutexLock lock(&mu_);
      std::deque<uint32_t>& from = preferred_waiting_.empty() ? waiting_ : preferred_waiting_;
      if (from.empty() || cancel_) break;
      p = from.front();
      from.pop_front();
      begun_.push_back(p);
    }
    Status st = StageOne(p);
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
            Mib(progress_.bytes_copied) + " copied) in " +
            std::to_string(progress_.seconds.load()) + " s into " + local_dir_);
  }
}

Status Stager::StageOne(uint32_t p) {
  const std::string name = manifest_->PackName(p);
  const std::string local = local_dir_ + "/" + name;
  bool intact = false;
  CLAIRFS_RETURN_IF_ERROR(VerifyExisting(p, local, &intact));
  if (intact) {
    progress_.packs_reused++;
  } else {
    const std::string tmp = local_dir_ + "/." + name + ".staging";
    Status st = Copy(p, dataset_dir_ + "/" + name, tmp);
    if (st.ok() && ::rename(tmp.c_str(), local.c_str()) != 0) {
      st = Status::FromErrno(errno, "rename " + tmp);
    }
    if (!st.ok()) {
      ::unlink(tmp.c_str());
      return st;
    }
  }
  auto file = format::OpenPack(local_dir_, *manifest_, p);
  if (!file.ok()) return file.status();
  MutexLock lock(&mu_);
  owned_[p] = std::move(file).value();
  staged_[p].store(owned_[p].get(), std::memory_order_release);
  return Status::Ok();
}

Status Stager::VerifyExisting(uint32_t p, const std::string& path, bool* intact) {
  *intact = false;
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 ||
      static_cast<uint64_t>(st.st_size) != manifest_->partition(p).pack_bytes) {
    return Status::Ok();  // absent or of another size: copy it
  }
  Status v = format::VerifyPackChecksum(local_dir_, *manifest_, p);
  if (v.ok()) {
    *intact = true;
    progress_.bytes_verified += manifest_->partition(p).pack_bytes;
  } else {
    Log(LogLevel::kInfo, "staged copy " + path + " is stale or damaged, copying again");
  }
  return Status::Ok();
}

Status Stager::Copy(uint32_t p, const std::string& from, const std::string& to) {
  int in = ::open(from.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0 && errno == ENOENT) {
    return Status::NotFound(from + ": partition " + std::to_string(p) +
                            " pack is missing from the dataset directory");
  }
  if (in < 0) return Status::FromErrno(errno, "open " + from);
  ::posix_fadvise(in, 0, 0, POSIX_FADV_SEQUENTIAL);
  auto out = format::BufferedWriter::Create(to, kChunk);
  if (!out.ok()) {
    ::close(in);
    return out.status();
  }
  format::StreamingChecksum sum;
  std::vector<char> buf(kChunk);
  uint64_t total = 0;
  Status st;
  while (st.ok() && !cancel_) {
    ssize_t n = ::read(in, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      st = Status::FromErrno(errno, "read " + from);
      break;
    }
    if (n == 0) break;
    if (source_ != nullptr) source_->Add(p, total, static_cast<uint64_t>(n), SourceRead::kStaging);
    sum.Update(buf.data(), static_cast<size_t>(n));
    st = (*out)->Append(buf.data(), static_cast<size_t>(n));
    total += static_cast<uint64_t>(n);
    progress_.bytes_copied += static_cast<uint64_t>(n);
    MaybeLogProgress();
  }
  ::close(in);
  Status closed = (*out)->Close(/*sync=*/false);  // node-local and transient: no fsync
  if (st.ok()) st = closed;
  if (st.ok() && cancel_) st = Status::IOError("staging cancelled", ECANCELED);
  if (st.ok() && (total != manifest_->partition(p).pack_bytes ||
                  sum.Digest() != manifest_->partition(p).pack_checksum)) {
    st = Status::Corruption(from + ": pack does not match the manifest (size or checksum)");
  }
  if (!st.ok()) progress_.bytes_copied -= total;  // counts only packs in use
  return st;
}

void Stager::MaybeLogProgress() {
  const auto now = clock_->Now();
  int64_t due = next_log_ns_.load(std::memory_order_relaxed);
  if (now.time_since_epoch().count() < due) return;
  const int64_t next = (now + log_every_).time_since_epoch().count();
  if (!next_log_ns_.compare_exchange_strong(due, next, std::memory_order_relaxed)) return;
  const double secs = std::chrono::duration<double>(now - start_).count();
  const uint64_t copied = progress_.bytes_copied;
  const auto rate = static_cast<uint64_t>(secs > 0 ? static_cast<double>(copied) / secs : 0);
  Log(LogLevel::kInfo, "staging: " + Mib(copied) + " of " + Mib(progress_.bytes_total) +
                           " copied, " + std::to_string(progress_.packs_done.load()) + "/" +
                           std::to_string(progress_.packs_total.load()) + " packs done, " +
                           Mib(rate) + "/s");
}

}  // namespace clairfs::fs
