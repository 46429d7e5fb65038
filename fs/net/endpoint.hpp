// Endpoint: the request/reply logic of a Transport above any message layer.
//
// A transport's progress thread moves bytes; the Endpoint decides what they
// mean. Reads are queued per peer and leave as one request batch per peer;
// incoming request batches go to a bounded queue served by `server_threads`
// threads, whose replies are batched per peer the same way; incoming replies
// complete their reads by id. A reply for an unknown id (late, duplicated or
// forged) is counted and dropped. Deadlines are enforced here. A published
// notice is copied into every peer's notice queue, which leaves as one notice
// batch per peer in publication order; an incoming notice batch goes to the
// notice handler, notice by notice, in the order it holds them.
//
// Thread-safe. Lock order: mu_ only (callbacks always run without it).
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/mutex.hpp"
#include "fs/net/protocol.hpp"
#include "fs/net/transport.hpp"

namespace clairfs::fs {

enum class MessageKind : int { kRequests = 1, kReplies = 2, kNotices = 3 };

struct OutMessage {
  int peer;
  MessageKind kind;
  std::vector<char> bytes;
};

// The one count of peers' reads this rank answered (reads_served: answered
// with bytes; bytes_served: those bytes), whichever thread answered them.
struct EndpointCounters {
  std::atomic<uint64_t> reads_sent{0}, replies_received{0}, timeouts{0};
  std::atomic<uint64_t> reads_served{0}, bytes_served{0}, rejected_messages{0};
  std::atomic<uint64_t> served_at_once{0};  // of reads_served: without a server thread
  std::atomic<uint64_t> unknown_replies{0};
  // notices_sent: notices queued to peers (one per peer a notice goes to);
  // notices_received: peers' notices decoded, handed to the handler if set;
  // notices_dropped: not queued for a peer whose queue was full.
  std::atomic<uint64_t> notices_sent{0}, notices_received{0}, notices_dropped{0};
};

class Endpoint {
 public:
  // Reads of at most kServeNowBytes that `serve_now` (optional) answers are
  // answered by the thread delivering the request batch. A frame read's size
  // shows only once its table is read: `serve_now` is asked about every one,
  // and declines those whose answer would be larger. Peers' notices go to
  // `on_notice` (optional: without it they are counted and dropped).
  static constexpr uint32_t kServeNowBytes = 256u << 10;
  Endpoint(int rank, int size, Transport::ServeFn serve, int server_threads,
           Transport::ServeNowFn serve_now = {}, Transport::NoticeFn on_notice = {},
           size_t max_queued_requests = 4096);
  ~Endpoint();

  // Client side.
  void Read(int peer, const PackRead& read, std::chrono::steady_clock::time_point deadline,
            Transport::ReplyFn done);
  // Queues `notice` (CheckNoticeSize's to accept) for every peer, one copy
  // shared by all of them; dropped once stopped, and for a peer that has
  // kMaxQueuedNotices notices still to send (its link stalled): returns the
  // number of peers it was dropped for.
  static constexpr size_t kMaxQueuedNotices = 1u << 16;
  int Publish(std::span<const char> notice);
  // The same for `peer` alone (not this rank): 1 if dropped, else 0.
  int Send(int peer, std::span<const char> notice);

  // Progress side: messages ready to send (request and reply batches of at
  // most kMaxBatch entries; at most one notice batch per peer, the rest of a
  // longer queue left for the next call), and incoming messages.
  std::vector<OutMessage> TakeOutgoing();
  void Deliver(int peer, MessageKind kind, const char* data, size_t size);
  // Fails reads whose deadline has passed; returns the next deadline.
  std::chrono::steady_clock::time_point ExpireDeadlines(std::chrono::steady_clock::time_point now);
  // Blocks until there is something to send or `until`, whichever is first.
  void WaitForOutgoing(std::chrono::steady_clock::time_point until);
  // Completes every outstanding read with an error and stops the servers.
  void Stop();

  const EndpointCounters& counters() const { return counters_; }

 private:
  struct Pending {
    int peer;
    std::chrono::steady_clock::time_point deadline;
    Transport::ReplyFn done;
  };
  struct Job {
    int peer;
    wire::Request request;
  };
  // Queues `notice` for the peers in [first, end) but this rank; returns
  // how many it was dropped for.
  int Queue(std::span<const char> notice, int first, int end) CLAIRFS_EXCLUDES(mu_);
  void DeliverRequests(int peer, const char* data, size_t size);
  void DeliverReplies(int peer, const char* data, size_t size);
  void DeliverNotices(int peer, const char* data, size_t size);
  // Moves the queued batches of `peer` to `out`; true if notices remain.
  bool TakeBatches(int peer, std::vector<OutMessage>* out) CLAIRFS_REQUIRES(mu_);
  void ServerLoop();
  // The reply to `request` carrying `data` (a ServeFn's answer), counted.
  wire::Reply Answer(const wire::Request& request, Result<std::vector<char>> data);
  void Complete(uint64_t id, Result<std::span<const char>> result);

  const int rank_, size_;
  const Transport::ServeFn serve_;
  const Transport::ServeNowFn serve_now_;
  const Transport::NoticeFn on_notice_;
  const size_t max_queued_;
  EndpointCounters counters_;

  Mutex mu_;
  CondVar out_cv_;  // something to send
  CondVar job_cv_;  // a request to serve, or stop
  bool stopped_ CLAIRFS_GUARDED_BY(mu_) = false;
  uint64_t next_id_ CLAIRFS_GUARDED_BY(mu_) = 1;
  std::unordered_map<uint64_t, Pending> pending_ CLAIRFS_GUARDED_BY(mu_);
  std::multimap<std::chrono::steady_clock::time_point, uint64_t> deadlines_ CLAIRFS_GUARDED_BY(mu_);
  // Per peer.
  std::vector<std::vector<wire::Request>> out_requests_ CLAIRFS_GUARDED_BY(mu_);
  std::vector<std::vector<wire::Reply>> out_replies_ CLAIRFS_GUARDED_BY(mu_);
  std::vector<std::deque<std::shared_ptr<const std::vector<char>>>> out_notices_
      CLAIRFS_GUARDED_BY(mu_);
  bool has_outgoing_ CLAIRFS_GUARDED_BY(mu_) = false;
  std::deque<Job> jobs_ CLAIRFS_GUARDED_BY(mu_);
  // Started by the constructor, joined by Stop() (the owner's thread).
  std::vector<std::thread> servers_;
};

}  // namespace clairfs::fs
