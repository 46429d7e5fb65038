// LoopbackTransport: N ranks inside one process, for tests and the simulator.
//
// A LoopbackFabric connects the ranks; each rank's transport runs the same
// Endpoint logic as MpiTransport on its own progress thread. The fabric can
// inject faults: a dead rank (messages to and from it vanish), a delay per
// message, reordering, replies damaged on the way, and raw bytes as if sent
// by a peer. Notices take the same path, dead ranks and delays included, but
// are never reordered: one sender's notices leave the fabric in the order
// they entered it, as MPI keeps them (reordering tests reply matching).
// Thread-safe.
#pragma once

#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "base/mutex.hpp"
#include "fs/net/endpoint.hpp"
#include "fs/net/transport.hpp"

namespace clairfs::fs {

class LoopbackFabric {
 public:
  explicit LoopbackFabric(int size);
  int size() const { return size_; }

  void SetDead(int rank, bool dead);
  void SetDelay(std::chrono::microseconds delay);
  void SetReorder(bool reorder);
  // Replies sent by `rank` arrive with their last byte flipped (the end of
  // the last payload: no wire checksum catches it, the reader's must).
  void SetDamageReplies(int rank, bool damage);
  // Delivers `bytes` to `to` as a message of `kind` from `from`.
  void Inject(int from, int to, MessageKind kind, std::vector<char> bytes);

 private:
  friend class LoopbackTransport;
  struct Message {
    std::chrono::steady_clock::time_point ready;
    int from;
    MessageKind kind;
    std::vector<char> bytes;
  };
  void Send(int from, int to, MessageKind kind, std::vector<char> bytes);
  // Messages for `rank` whose time has come.
  std::vector<Message> Receive(int rank);
  Status Broadcast(int rank, std::vector<char>* bytes, int root,
                   std::chrono::steady_clock::time_point deadline);
  Result<std::vector<int>> Gather(int rank, int value,
                                  std::chrono::steady_clock::time_point deadline);
  Status Barrier(std::chrono::steady_clock::time_point deadline);

  const int size_;
  Mutex mu_;
  CondVar bcast_cv_;
  std::vector<std::deque<Message>> inbox_ CLAIRFS_GUARDED_BY(mu_);
  std::vector<bool> dead_ CLAIRFS_GUARDED_BY(mu_);
  std::vector<bool> damage_replies_ CLAIRFS_GUARDED_BY(mu_);
  std::chrono::microseconds delay_ CLAIRFS_GUARDED_BY(mu_){0};
  bool reorder_ CLAIRFS_GUARDED_BY(mu_) = false;
  std::mt19937 rng_ CLAIRFS_GUARDED_BY(mu_){12345};
  // root -> bytes of the current broadcast
  std::map<int, std::vector<char>> bcast_ CLAIRFS_GUARDED_BY(mu_);
  int bcast_taken_ CLAIRFS_GUARDED_BY(mu_) = 0;
  // Arrivals over all barriers; generation = arrived / size.
  uint64_t barrier_arrived_ CLAIRFS_GUARDED_BY(mu_) = 0;
  struct GatherRound {
    std::vector<int> values;  // by rank
    int arrived = 0, left = 0;
  };
  // By generation; erased once every rank left.
  std::map<uint64_t, GatherRound> gathers_ CLAIRFS_GUARDED_BY(mu_);
  // Arrivals over all gathers; generation = arrived / size.
  uint64_t gather_arrived_ CLAIRFS_GUARDED_BY(mu_) = 0;
};

class LoopbackTransport final : public Transport {
 public:
  LoopbackTransport(std::shared_ptr<LoopbackFabric> fabric, int rank);
  ~LoopbackTransport() override;

  int rank() const override { return rank_; }
  int size() const override { return fabric_->size(); }
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
  const EndpointCounters* counters() const override {
    return endpoint_ ? &endpoint_->counters() : nullptr;
  }

 private:
  void Progress();
  const std::shared_ptr<LoopbackFabric> fabric_;
  const int rank_;
  NoticeFn on_notice_;  // until Start hands it to the Endpoint
  std::unique_ptr<Endpoint> endpoint_;
  std::atomic<bool> stop_{false};
  std::thread progress_;
};

}  // namespace clairfs::fs
