#include "fs/dist/distributed_pack_store.hpp"

#include <cstring>

#include "base/log.hpp"
#include "fs/net/endpoint.hpp"
#include "partitioner/format/codec.hpp"

namespace clairfs::fs {

// A partition homed elsewhere, seen as a file: a read is one round trip to an
// owner, or the dataset directory's pack when no owner answers. The bytes are
// copied once, from the received message to where the reader wants them.
class DistributedPackStore::RemotePack final : public format::RandomAccessFile {
 public:
  RemotePack(DistributedPackStore* store, uint32_t p)
      : store_(store), p_(p), name_(store->manifest_->PackName(p) + " (remote)") {}

  Status ReadExact(uint64_t offset, size_t size, void* dst) const override {
    if (FromAhead(offset, size, dst)) return Status::Ok();
    if (size <= kMaxReadBytes) {
      const auto take = [&](std::span<const char> bytes) {
        if (bytes.size() != size) return Status::Corruption(name_ + ": answer of the wrong size");
        if (size > 0) std::memcpy(dst, bytes.data(), size);
        return Status::Ok();
      };
      if (FromOwners({p_, offset, static_cast<uint32_t>(size)}, take, size)) return Status::Ok();
    }
    auto shared = Fallback(size);
    if (!shared.ok()) return shared.status();
    return (*shared)->ReadExact(offset, size, dst);
  }

  // One round trip for the table and the frame (format::ReadTableAndFrame on
  // the owner), split where they go as the answer is received.
  std::optional<Result<bool>> FetchFrame(uint64_t payload, uint64_t file_byte, char* frame_dst,
                                         size_t frame_len,
                                         std::vector<char>* table) const override {
    bool in_place = false;
    size_t got = 0;
    const auto take = [&](std::span<const char> bytes) {
      auto split =
          format::SplitTableAndFrame(bytes.data(), bytes.size(), frame_dst, frame_len, table);
      if (!split.ok()) return split.status();
      in_place = *split;
      got = bytes.size();
      return Status::Ok();
    };
    if (FromOwners({p_, payload, 0, file_byte}, take, 0)) {
      store_->counters_.peer_bytes += got;
      return Result<bool>(in_place);
    }
    auto shared = Fallback(0);
    if (!shared.ok()) return Result<bool>(shared.status());
    const format::RandomAccessFile* file = *shared;
    std::vector<char> answer;
    Status st = format::ReadTableAndFrame(
        [file](uint64_t off, size_t n, void* dst) { return file->ReadExact(off, n, dst); },
        store_->manifest_->partition(p_).pack_bytes, payload, file_byte, kMaxReadBytes, &answer);
    if (!st.ok()) return Result<bool>(st);
    store_->counters_.fallback_bytes += answer.size();
    return format::SplitTableAndFrame(answer.data(), answer.size(), frame_dst, frame_len, table);
  }
  const std::string& name() const override { return name_; }

  // Asks the first owner that is not a suspect for the range now; the read of
  // it that follows takes the answer (FromAhead).
  void FetchAhead(uint64_t offset, size_t size) const override {
    if (store_->transport_ == nullptr || size > kMaxReadBytes) return;
    for (int owner : store_->ownership_.Owners(p_)) {
      if (owner == store_->rank_ || store_->Suspect(owner)) continue;
      store_->ahead_.Start(owner, p_, offset, static_cast<uint32_t>(size));
      return;
    }
  }

 private:
  // The range from a read asked for ahead; false when there was none or its
  // answer failed (then counted as a failure of its peer, as FromOwners does).
  bool FromAhead(uint64_t offset, size_t size, void* dst) const {
    const PeerAhead::Taken got = store_->ahead_.Take(p_, offset, size, dst);
    if (!got.found) return false;
    DistCounters& c = store_->counters_;
    if (got.status.ok()) {
      c.peer_reads++;
      c.peer_bytes += size;
      return true;
    }
    c.peer_failures++;
    if (got.status.err() == ETIMEDOUT) store_->MarkSuspect(got.owner);
    return false;
  }
  // Asks the owners in order, skipping suspects; true once one answered and
  // `take` accepted its bytes (`bytes`: added to peer_bytes).
  bool FromOwners(const PackRead& read, const std::function<Status(std::span<const char>)>& take,
                  size_t bytes) const {
    if (store_->transport_ == nullptr) return false;
    DistCounters& c = store_->counters_;
    for (int owner : store_->ownership_.Owners(p_)) {
      if (owner == store_->rank_ || store_->Suspect(owner)) continue;
      const auto deadline = std::chrono::steady_clock::now() + store_->options_.peer_timeout;
      Status st = ReadSync(*store_->transport_, owner, read, deadline, take);
      if (st.ok()) {
        c.peer_reads++;
        c.peer_bytes += bytes;
        return true;
      }
      c.peer_failures++;
      if (st.err() == ETIMEDOUT) store_->MarkSuspect(owner);
    }
    return false;
  }
  // The dataset directory's pack, for a read of `bytes` that no owner answered.
  Result<const format::RandomAccessFile*> Fallback(size_t bytes) const {
    auto shared = store_->shared_.Pack(p_);
    if (!shared.ok()) return shared;
    store_->counters_.fallback_reads++;
    store_->counters_.fallback_bytes += bytes;
    return shared;
  }

  DistributedPackStore* const store_;
  const uint32_t p_;
  const std::string name_;
};

DistributedPackStore::DistributedPackStore(std::string dataset_dir,
                                           std::shared_ptr<const format::Manifest> manifest,
                                           Ownership ownership, int rank, Transport* transport,
                                           Stager* stager, DistOptions options, SourceReads* source)
    : manifest_(manifest),
      ownership_(ownership),
      rank_(rank),
      transport_(transport),
      stager_(stager),
      options_(options),
      ahead_(transport, options.peer_timeout),
      readahead_(options.pack_readahead != 0
                     ? std::make_unique<PackReadahead>(options.pack_readahead)
                     : nullptr),
      shared_(std::move(dataset_dir), manifest, readahead_.get(), source) {
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
    stager_->Prefer(p);  // needed before its turn: staged next
    // Read once: what this read brings from the dataset directory, staging
    // does not read again.
    auto source = shared_.Pack(p);
    if (!source.ok()) return source;
    return stager_->Reading(p, *source);
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

// A frame read's answer, read with `read` from this rank's copy of its partition.
Status DistributedPackStore::ServeFrame(const PackRead& read, const format::ReadAtFn& read_at,
                                        size_t limit, std::vector<char>* out) const {
  return format::ReadTableAndFrame(read_at, manifest_->partition(read.partition).pack_bytes,
                                   read.offset, read.frame_at, limit, out);
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
  if ((read.length > 0 || read.frame_at != kNoFrame) &&
      !file->ReadIfCached(read.offset, 1, &probe)) {
    return std::nullopt;
  }
  std::vector<char> out;
  if (read.frame_at != kNoFrame) {
    // Anything but a whole answer within kServeNowBytes (a page not cached, a
    // large frame, a refusal) is left to Serve, which gives the final word.
    const auto cached = [file](uint64_t off, size_t n, void* dst) {
      return file->ReadIfCached(off, n, dst) ? Status::Ok() : Status::IOError("not cached", EAGAIN);
    };
    if (!ServeFrame(read, cached, Endpoint::kServeNowBytes, &out).ok()) return std::nullopt;
  } else {
    out.resize(read.length);
    if (!file->ReadIfCached(read.offset, read.length, out.data())) return std::nullopt;
  }
  return Result<std::vector<char>>(std::move(out));
}

Result<std::vector<char>> DistributedPackStore::Serve(int peer, const PackRead& read) {
  CLAIRFS_RETURN_IF_ERROR(CheckServed(read));
  auto file = Own(read.partition);
  if (!file.ok()) return file.status();
  std::vector<char> out;
  if (read.frame_at != kNoFrame) {
    const format::RandomAccessFile* f = *file;
    CLAIRFS_RETURN_IF_ERROR(ServeFrame(
        read, [f](uint64_t off, size_t n, void* dst) { return f->ReadExact(off, n, dst); },
        kMaxReadBytes, &out));
  } else {
    out.resize(read.length);
    CLAIRFS_RETURN_IF_ERROR((*file)->ReadExact(read.offset, read.length, out.data()));
  }
  return out;
}

bool DistributedPackStore::Suspect(int peer) const {
  return std::chrono::steady_clock::now().time_since_epoch().count() < suspect_until_[peer].load();
}

void DistributedPackStore::MarkSuspect(int peer) {
  const auto until = std::chrono::steady_clock::now() + options_.suspect_for;
  if (!Suspect(peer)) {
    Log(LogLevel::kWarn, "peer rank " + std::to_string(peer) + " did not answer within " +
                             std::to_string(options_.peer_timeout.count()) +
                             " ms; skipping it for " +
                             std::to_string(options_.suspect_for.count() / 1000) + " s");
  }
  suspect_until_[peer].store(until.time_since_epoch().count());
}

}  // namespace clairfs::fs
