#include "fs/dist/distributed_pack_store.hpp"

#include <cstring>

#include "base/log.hpp"

namespace clairfs::fs {

// A partition homed elsewhere, seen as a file: ReadExact is a round trip to an
// owner, or the dataset directory's pack when no owner answers.
class DistributedPackStore::RemotePack final : public format::RandomAccessFile {
 public:
  RemotePack(DistributedPackStore* store, uint32_t p)
      : store_(store), p_(p), name_(store->manifest_->PackName(p) + " (remote)") {}

  Status ReadExact(uint64_t offset, size_t size, void* dst) const override {
    DistCounters& c = store_->counters_;
    if (store_->transport_ != nullptr && size <= kMaxReadBytes) {
      for (int owner : store_->ownership_.Owners(p_)) {
        if (owner == store_->rank_ || store_->Suspect(owner)) continue;
        const auto deadline = SteadyClock::now() + store_->options_.peer_timeout;
        auto r = ReadSync(*store_->transport_, owner,
                          {p_, offset, static_cast<uint32_t>(size)}, deadline);
        if (r.ok() && r->size() == size) {
          std::memcpy(dst, r->data(), size);
          c.peer_reads++;
          c.peer_bytes += size;
          return Status::Ok();
        }
        c.peer_failures++;
        if (!r.ok() && r.status().err() == ETIMEDOUT) store_->MarkSuspect(owner);
      }
    }
    auto shared = store_->shared_.Pack(p_);
    if (!shared.ok()) return shared.status();
    c.fallback_reads++;
    c.fallback_bytes += size;
    return (*shared)->ReadExact(offset, size, dst);
  }
  const std::string& name() const override { return name_; }

 private:
  DistributedPackStore* const store_;
  const uint32_t p_;
  const std::string name_;
};

DistributedPackStore::DistributedPackStore(std::string dataset_dir,
                                           std::shared_ptr<const format::Manifest> manifest,
                                           Ownership ownership, int rank, Transport* transport,
                                           Stager* stager, DistOptions options)
    : manifest_(manifest),
      ownership_(ownership),
      rank_(rank),
      transport_(transport),
      stager_(stager),
      options_(options),
      readahead_(options.pack_readahead != 0
                     ? std::make_unique<PackReadahead>(options.pack_readahead)
                     : nullptr),
      shared_(std::move(dataset_dir), manifest, readahead_.get()) {
  const uint32_t n = manifest_->partition_count() + 1;
  for (uint32_t p = 0; p < n; ++p) {
    const auto owners = ownership_.Owners(p);
    const bool others = owners.size() > 1 || owners[0] != rank_;
    remote_.push_back(others ? std::make_unique<RemotePack>(this, p) : nullptr);
  }
  const int ranks = transport_ ? transport_->size() : 1;
  suspect_until_.reset(new std::atomic<int64_t>[ranks]);
  for (int r = 0; r < ranks; ++r) suspect_until_[r].store(0);
  damage_logged_.reset(new std::atomic<bool>[n]);
  for (uint32_t p = 0; p < n; ++p) damage_logged_[p].store(false);
}

DistributedPackStore::~DistributedPackStore() = default;

Result<const format::RandomAccessFile*> DistributedPackStore::Own(uint32_t p) {
  if (stager_ != nullptr) {
    if (const format::RandomAccessFile* f = stager_->Staged(p)) return f;
  }
  return shared_.Pack(p);
}

Result<const format::RandomAccessFile*> DistributedPackStore::Pack(uint32_t p) {
  if (p > manifest_->partition_count()) {
    return Status::InvalidArgument("partition " + std::to_string(p) + " out of range");
  }
  if (!ownership_.Holds(rank_, p)) return remote_[p].get();
  auto own = Own(p);
  // Not staged here and the dataset's pack cannot be opened (it vanished):
  // another owner's staged copy can still serve.
  if (!own.ok() && remote_[p] != nullptr) return remote_[p].get();
  return own;
}

Result<const format::RandomAccessFile*> DistributedPackStore::Reread(
    uint32_t p, const format::RandomAccessFile* damaged) {
  auto shared = shared_.Pack(p);
  if (!shared.ok()) return shared;
  if (*shared == damaged) return static_cast<const format::RandomAccessFile*>(nullptr);
  counters_.damaged_rereads++;
  if (!damage_logged_[p].exchange(true)) {
    Log(LogLevel::kWarn, "bytes read from " + damaged->name() +
                             " failed their checksum; reading them again from the dataset "
                             "directory (logged once per partition; stats: damaged_rereads)");
  }
  return shared;
}

Status DistributedPackStore::CheckServed(const PackRead& read) const {
  if (read.partition > manifest_->partition_count() || !ownership_.Holds(rank_, read.partition)) {
    return Status::NotFound("rank " + std::to_string(rank_) + " does not hold partition " +
                            std::to_string(read.partition));
  }
  const uint64_t size = manifest_->partition(read.partition).pack_bytes;
  if (read.offset > size || read.length > size - read.offset) {
    return Status::InvalidArgument("read past the end of " + manifest_->PackName(read.partition));
  }
  return Status::Ok();
}

std::optional<Result<std::vector<char>>> DistributedPackStore::ServeIfCached(int peer,
                                                                            const PackRead& read) {
  (void)peer;
  if (Status st = CheckServed(read); !st.ok()) return Result<std::vector<char>>(st);
  const format::RandomAccessFile* file =
      stager_ != nullptr ? stager_->Staged(read.partition) : nullptr;
  if (file == nullptr) file = shared_.IfOpen(read.partition);
  if (file == nullptr) return std::nullopt;
  // A cold range usually starts cold: one byte tells, before a buffer is
  // allocated and zeroed for nothing.
  char probe;
  if (read.length > 0 && !file->ReadIfCached(read.offset, 1, &probe)) return std::nullopt;
  std::vector<char> out(read.length);
  if (!file->ReadIfCached(read.offset, read.length, out.data())) return std::nullopt;
  return Result<std::vector<char>>(std::move(out));
}

Result<std::vector<char>> DistributedPackStore::Serve(int peer, const PackRead& read) {
  CLAIRFS_RETURN_IF_ERROR(CheckServed(read));
  auto file = Own(read.partition);
  if (!file.ok()) return file.status();
  std::vector<char> out(read.length);
  CLAIRFS_RETURN_IF_ERROR((*file)->ReadExact(read.offset, read.length, out.data()));
  return out;
}

bool DistributedPackStore::Suspect(int peer) const {
  return SteadyClock::now().time_since_epoch().count() < suspect_until_[peer].load();
}

void DistributedPackStore::MarkSuspect(int peer) {
  const auto until = SteadyClock::now() + options_.suspect_for;
  if (!Suspect(peer)) {
    Log(LogLevel::kWarn, "peer rank " + std::to_string(peer) + " did not answer within " +
                             std::to_string(options_.peer_timeout.count()) +
                             " ms; skipping it for " +
                             std::to_string(options_.suspect_for.count() / 1000) + " s");
  }
  suspect_until_[peer].store(until.time_since_epoch().count());
}

}  // namespace clairfs::fs
