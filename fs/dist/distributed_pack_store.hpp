// DistributedPackStore: a PackStore for one rank of a multi-node job.
//
// A partition this rank holds is read from its staged local copy, or from the
// dataset directory while staging is still running (or after it failed; if
// that pack cannot be opened either, from the partition's other owners). Any
// other partition is a RemotePack: each read asks the partition's owners in
// order (home first, then replicas) with a deadline, skips a peer that
// recently timed out, and falls back to the pack in the dataset directory -
// slower, never wrong, never a hang. A read is a byte range, or a frame of a
// framed file together with its frame table (RandomAccessFile::FetchFrame):
// one round trip per block; the frames a sequential reader will read next are
// asked for ahead (RandomAccessFile::FetchAhead, PeerAhead), several in flight
// at once. Bytes travel as stored (compressed); the caller
// decodes and verifies them, so a peer cannot hand out wrong bytes unnoticed,
// and reads them again from the dataset directory (Reread).
//
// Serve() answers peers' reads (ranges and frame reads) from this rank's own
// copies.
// Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "fs/dist/ownership.hpp"
#include "fs/dist/peer_ahead.hpp"
#include "fs/dist/stager.hpp"
#include "fs/net/transport.hpp"
#include "fs/store/pack_store.hpp"
#include "fs/store/posix_pack_store.hpp"
#include "partitioner/format/codec.hpp"
#include "partitioner/format/manifest.hpp"

namespace clairfs::fs {

// Reads of partitions homed elsewhere (this rank's own copies are counted by
// the vfs, as "local pack" blocks). The reads this rank serves to peers are
// counted by the transport's Endpoint (EndpointCounters::reads_served).
struct DistCounters {
  std::atomic<uint64_t> peer_reads{0}, peer_bytes{0};          // answered by a peer
  std::atomic<uint64_t> fallback_reads{0}, fallback_bytes{0};  // from the dataset directory
  std::atomic<uint64_t> peer_failures{0};                      // errors and timeouts
  std::atomic<uint64_t> damaged_rereads{0};  // failed their checksum, read again from the dataset
};

struct DistOptions {
  // Deadline of one read from a peer before trying the next owner, then the
  // dataset directory (config peer_timeout_ms).
  std::chrono::milliseconds peer_timeout{2000};
  std::chrono::milliseconds suspect_for{10000};  // a peer that timed out is skipped this long
  // Bytes of packs the kernel is asked to read into its page cache in the
  // background, each pack on first use here (PackReadahead; 0 = off; config
  // pack_readahead). Turns a cold first epoch's random reads into sequential
  // ones; costs page cache, which stays reclaimable.
  uint64_t pack_readahead = 0;
};

class DistributedPackStore final : public PackStore {
 public:
  // `transport`, `stager` and `source` may be null (one rank; no staging; no
  // count of the dataset directory's reads). Not owned.
  DistributedPackStore(std::string dataset_dir, std::shared_ptr<const format::Manifest> manifest,
                       Ownership ownership, int rank, Transport* transport, Stager* stager,
                       DistOptions options, SourceReads* source = nullptr);
  ~DistributedPackStore() override;

  Result<const format::RandomAccessFile*> Pack(uint32_t partition) override;
  // The dataset directory's pack when `damaged` is a staged copy or a peer.
  Result<const format::RandomAccessFile*> Reread(uint32_t partition,
                                                 const format::RandomAccessFile* damaged) override;
  // Answers a peer's read of a partition this rank holds.
  Result<std::vector<char>> Serve(int peer, const PackRead& read);
  // Serve's answer when it needs no wait: a refusal, or bytes of an open copy
  // that are all in the page cache. Nothing when the disk (or an open) would
  // be waited for: then call Serve, where waiting is fine.
  std::optional<Result<std::vector<char>>> ServeIfCached(int peer, const PackRead& read);
  const DistCounters& counters() const { return counters_; }
  const PeerAheadCounters& ahead_counters() const { return ahead_.counters(); }
  const Ownership& ownership() const { return ownership_; }

 private:
  class RemotePack;
  // This rank's copy of a partition it holds: staged, else the dataset's.
  Result<const format::RandomAccessFile*> Own(uint32_t p);
  // Whether this rank may answer `read` (holds the partition, in its bounds).
  Status CheckServed(const PackRead& read) const;
  Status ServeFrame(const PackRead& read, const format::ReadAtFn& read_at, size_t limit,
                    std::vector<char>* out) const;
  bool Suspect(int peer) const;
  void MarkSuspect(int peer);

  const std::shared_ptr<const format::Manifest> manifest_;
  const Ownership ownership_;
  const int rank_;
  Transport* const transport_;
  Stager* const stager_;
  const DistOptions options_;
  PeerAhead ahead_;                                 // peers' frames asked for before their reads
  const std::unique_ptr<PackReadahead> readahead_;  // null when off; before shared_
  PosixPackStore shared_;                           // the packs in the dataset directory
  DistCounters counters_;
  // Per partition with an owner other than this rank: reads from the others.
  std::vector<std::unique_ptr<RemotePack>> remote_;
  std::unique_ptr<std::atomic<int64_t>[]> suspect_until_;  // per rank, steady ns
  std::unique_ptr<std::atomic<bool>[]> damage_logged_;     // per partition
};

}  // namespace clairfs::fs
