// Cluster: the multi-node side of one clairfsd, set up before it mounts.
//
// Started by an MPI launcher, the daemon joins the job (MpiTransport); alone,
// it is a one-node job and never touches MPI. Rank 0 reads the manifest from
// the dataset directory and broadcasts it, so the shared file system sees one
// metadata read per job, and every rank checks it. Each rank then stages the
// partitions it holds into its local directory in the background and serves
// peers' reads of them; the PackStore it hands out reads everything else from
// peers or, failing that, the dataset directory.
//
// Start-up (Agree, Start, Serve) on one thread; thread-safe after Serve();
// Shutdown() and Finalize() once, after unmounting.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/json.hpp"
#include "fs/dist/distributed_pack_store.hpp"
#include "fs/dist/ownership.hpp"
#include "fs/dist/stager.hpp"
#include "fs/net/transport.hpp"
#include "partitioner/format/manifest.hpp"

namespace clairfs::fs {

// The multi-node settings (config keys dataset, local_dir, stage_threads, stage_yield_ms,
// server_threads, start_timeout_ms, shutdown_wait_ms and the store's).
struct ClusterOptions {
  std::string dataset;         // the clairfs-partition output (required; expanded by the caller)
  std::string local_dir;       // node-local directory for staged packs; empty: no staging
  uint32_t stage_threads = 2;  // packs copied at once while staging
  // Staging pauses while the job's reads (its own, the prefetcher's, a
  // peer's) read this rank's packs from the dataset directory, and this long
  // after the last (Stager::YieldToReads); zero: never.
  std::chrono::milliseconds stage_yield{5};
  uint32_t server_threads = 4;  // peers' reads served at once (they may wait on a cold disk)
  // Bound of each start-up step every rank takes together (agreeing that all
  // are ready, the manifest broadcast): a rank that does not arrive in time
  // stops the job instead of leaving the others waiting.
  std::chrono::milliseconds start_timeout{120000};
  std::chrono::milliseconds shutdown_wait{10000};  // how long a stopping rank waits for the others
  DistOptions store;                               // reads of other ranks' partitions
  // Where the job will read each partition first (PlaceByReader over the
  // prefetch settings' first epoch), computed by rank 0 and sent to every
  // rank; null, or a Placement without homes: partition p on rank p mod N.
  std::function<Placement(const format::Manifest&, int ranks)> place;
  // Per manifest node, the step of the job's first epoch at which a rank
  // first reads it (UINT64_MAX: none does), computed by every rank; empty,
  // or null: not known. Staging copies those bytes first, in that order
  // (Stager::FirstUse).
  std::function<std::vector<uint64_t>(const format::Manifest&, int ranks)> first_use;
};

// The first byte of a first-use notice (Cluster::ShareFirstUse); the
// writable area's notices start with 1-4 (fs/vfs/write_area_peers.cpp).
inline constexpr uint8_t kFirstUseNotice = 0x80;

class MpiTransport;

class Cluster {
 public:
  // Joins the MPI job if there is one (MPI_Init uses argc/argv). MPI_Init is
  // bounded by `start_limit` (see MpiTransport::Init): past it the process exits.
  static Result<std::unique_ptr<Cluster>> Join(int* argc, char*** argv,
                                               std::chrono::milliseconds start_limit);
  ~Cluster();

  int rank() const { return rank_; }
  int size() const { return size_; }
  // Every rank's hostname is this one's as MPI sees it; for {host} in paths.
  const std::string& host() const { return host_; }

  // Collective start-up gate: every rank says whether it is ready (`local`);
  // OK only when all are. Every rank passes the same gates in the same order,
  // failed or not, so one rank's bad mount path or config stops the whole job
  // at once instead of leaving the others waiting. Not OK (naming the ranks)
  // when a rank is not ready, or when one has not arrived within `wait`
  // (then MPI is not finalized). A one-node job returns `local`.
  Status Agree(const Status& local, std::chrono::milliseconds wait);
  // Loads (rank 0) and broadcasts the manifest, prepares staging and the
  // store. Collective: every rank calls it; an error on any rank is reported
  // on all. Nothing runs in the background until Serve().
  Status Start(const ClusterOptions& options);
  // Before Serve: peers' reads of kAreaPartition go to `serve` (the writable
  // area's files), and their notices to `on_notice`. A job of one rank has
  // no peers: both are dropped.
  using AreaServeFn = std::function<Result<std::vector<char>>(const PackRead&)>;
  void ServeArea(AreaServeFn serve, Transport::NoticeFn on_notice);
  // The job's transport (null for one rank), for the writable area's notices
  // and reads.
  Transport* transport() { return transport_.get(); }
  // When the job first reads files (the step in its first epoch), as this
  // rank's training processes reported their orders: staged in that order
  // here (Stager::FirstUseLater) and sent to the other ranks that hold the
  // files' packs, which do the same (first-use notices). After Serve, before
  // Shutdown; any thread; cheap (the planning is the copying threads').
  void ShareFirstUse(const std::vector<FileStep>& files);
  // After the last gate: starts staging and serving peers' reads.
  Status Serve();
  std::shared_ptr<const format::Manifest> manifest() const { return manifest_; }
  PackStore* store() { return store_.get(); }
  // The members of stats.json's "cluster" section (docs/fuse.md): rank,
  // reads from peers and the dataset directory, the network, staging.
  void WriteStats(clairfs::JsonWriter& w) const;
  // After unmounting: waits (bounded) for every rank so none stops while a peer
  // still reads from it, then stops serving. Not OK if a peer never arrived.
  Status Shutdown(std::chrono::milliseconds wait);
  // The last step (MPI_Finalize): bounded by `limit`, after which the process
  // exits with `exit_code` and a log line (a peer ended without finalizing).
  // The destructor does it with (5 s, 1) when it was not called.
  void Finalize(std::chrono::milliseconds limit, int exit_code);

 private:
  Cluster() = default;
  int rank_ = 0, size_ = 1;
  std::string host_;
  std::unique_ptr<Transport> transport_;  // null for a one-node job
  MpiTransport* mpi_ = nullptr;           // transport_ when it is MPI
  // Start's step that decides the partitions' homes (ClusterOptions::place).
  Status Place(const ClusterOptions& o);
  std::shared_ptr<const format::Manifest> manifest_;
  std::unique_ptr<SourceReads> source_;  // the dataset directory's reads; outlives the two below
  Placement placement_;                  // rank 0's, as every rank received it
  std::unique_ptr<Stager> stager_;
  int server_threads_ = 1;  // ClusterOptions::server_threads, from Start()
  std::unique_ptr<DistributedPackStore> store_;
  std::unique_ptr<Ownership> own_;   // from Start
  AreaServeFn area_serve_;           // ServeArea's
  Transport::NoticeFn area_notice_;  // ServeArea's
  // A peer's first-use notice (ShareFirstUse), on the transport's thread.
  void TakeFirstUse(int peer, std::span<const char> notice);
  std::atomic<bool> bad_notice_logged_{false};
  bool shut_down_ = false;
};

}  // namespace clairfs::fs
