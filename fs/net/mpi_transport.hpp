// MpiTransport: one daemon per MPI rank (MPICH).
//
// Threading: MPI is initialised with MPI_THREAD_SERIALIZED and every MPI call
// after Start() is made by one progress thread, which owns all MPI state; the
// FUSE threads only queue reads and notices in the Endpoint and wait on
// their callbacks. One peer's notices arrive in order because MPI never lets
// a message overtake an earlier one of the same sender and tag.
// Before Start() (Broadcast) and after Stop() (finalize) the calling thread
// makes the calls, never concurrently with the progress thread.
// This is the only part of clairfs that includes <mpi.h>.
// Thread-safe like every Transport.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "fs/net/endpoint.hpp"
#include "fs/net/transport.hpp"

namespace clairfs::fs {

// True when this process was started by an MPI launcher (mpiexec, srun with
// PMI): a lone daemon without one runs as a one-node job and never touches MPI.
bool LaunchedByMpi();

// The MPI library this binary was compiled against ("MPICH 4.0.2", from
// mpi.h), and the one the dynamic loader gave it at run time (the text of
// MPI_Get_library_version, which MPI allows before MPI_Init). Neither
// initialises MPI; for clairfs-doctor.
std::string MpiBuiltWith();
std::string MpiRunsWith();

class MpiTransport final : public Transport {
 public:
  // Initialises MPI. Call once per process. MPI_Init waits for every rank of
  // the job; when it has not returned after `limit` (a rank never started,
  // died or hangs in it) the process logs so and exits with status 1.
  static Result<std::unique_ptr<MpiTransport>> Init(
      int* argc, char*** argv, std::chrono::milliseconds limit = std::chrono::minutes(2));
  // Finalize(5 s, exit code 1) unless Finalize() was called.
  ~MpiTransport() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Status Broadcast(std::vector<char>* bytes, int root,
                   std::chrono::steady_clock::time_point deadline) override;
  Result<std::vector<int>> Gather(int value,
                                  std::chrono::steady_clock::time_point deadline) override;
  Status Start(ServeFn serve, int server_threads, ServeNowFn serve_now = {}) override;
  void OnNotice(NoticeFn fn) override { on_notice_ = std::move(fn); }
  Status Publish(std::span<const char> notice) override;
  Status Send(int peer, std::span<const char> notice) override;
  void Read(int peer, const PackRead& read, std::chrono::steady_clock::time_point deadline,
            ReplyFn done) override;
  Status Barrier(std::chrono::steady_clock::time_point deadline) override;
  void Stop() override;
  // After a peer died, MPI_Finalize may wait for it forever: skip it.
  void SkipFinalize() { skip_finalize_ = true; }
  // Stops, then finalizes MPI unless it must be skipped (a collective timed
  // out, sends were left pending). When MPI_Finalize has not returned after
  // `limit` - a peer ended without finalizing - the process exits at once
  // with `exit_code` (std::_Exit: no destructors; the mount is already gone).
  void Finalize(std::chrono::milliseconds limit, int exit_code);
  // Ends the whole job (every rank) with `code`.
  void Abort(int code);
  const EndpointCounters* counters() const override {
    return endpoint_ ? &endpoint_->counters() : nullptr;
  }

 private:
  MpiTransport(int rank, int size) : rank_(rank), size_(size) {}
  void Progress();
  // Tests an MPI_Request* until done or `deadline` (then skips finalize).
  Status Complete(void* request, const char* what, std::chrono::steady_clock::time_point deadline);

  const int rank_, size_;
  NoticeFn on_notice_;  // until Start hands it to the Endpoint
  std::unique_ptr<Endpoint> endpoint_;
  std::atomic<bool> stop_{false};
  std::thread progress_;
  // A barrier asked of the progress thread: 0 idle, 1 requested, 2 posted, 3 done.
  std::atomic<int> barrier_{0};
  bool skip_finalize_ = false;
  bool stopped_ = false;
  bool finalized_ = false;
};

}  // namespace clairfs::fs
