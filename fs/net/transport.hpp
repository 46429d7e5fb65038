// Transport: how daemons ask each other for pack bytes.
//
// A read names a partition and a byte range of its pack (stored bytes, still
// compressed: the reader decodes), or one frame of a framed payload, sent after
// the payload's frame table (a frame read: one round trip where reading the
// table's header, the table and the frame would take three). Every read has a
// deadline; its callback runs exactly once - with the bytes, with the peer's
// error, or with a timeout - so no caller waits without bound. Requests to the
// same peer are pipelined and batched into one message where they queue up
// together.
//
// A notice is the other kind of message: bytes one rank publishes to every
// other rank, with no reply and no retry. Each receiving rank gets a peer's
// notices at most once and in the order the peer published them; those to a
// dead peer, or still queued when the transport stops, are lost.
//
// Implementations: MpiTransport (one daemon per MPI rank) and LoopbackTransport
// (every rank inside one process, with fault injection, for tests).
// All methods are thread-safe unless noted.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "base/status.hpp"

namespace clairfs::fs {

inline constexpr uint64_t kNoFrame = UINT64_MAX;
// A read of this partition is one of the writable area's files (clairfsd:
// WriteArea::ServePeer): bytes [offset, offset + length) of the serving
// rank's file number `frame_at`.
inline constexpr uint32_t kAreaPartition = UINT32_MAX;

struct PackRead {
  uint32_t partition = 0;
  uint64_t offset = 0;
  uint32_t length = 0;
  // kNoFrame: the read is bytes [offset, offset + length) of the pack. Else a
  // frame read: `offset` is where a framed payload starts, and the answer is
  // its frame table, then the stored bytes of the frame that holds byte
  // `frame_at` of the file (format::ReadTableAndFrame); `length` is 0.
  uint64_t frame_at = kNoFrame;
};

// Reads larger than this are refused by servers: a request names one payload
// or one frame, never a whole pack.
inline constexpr uint32_t kMaxReadBytes = 64u << 20;

// Notices larger than this are refused by Publish (EINVAL).
inline constexpr uint32_t kMaxNoticeBytes = 64u << 10;

struct EndpointCounters;  // fs/net/endpoint.hpp

class Transport {
 public:
  // The bytes live only during the call (they are the received message's):
  // copy what is needed, once, to where it goes.
  using ReplyFn = std::function<void(Result<std::span<const char>>)>;
  // Answers a peer's read; called on a server thread, may block on disk.
  using ServeFn = std::function<Result<std::vector<char>>(int peer, const PackRead&)>;
  // ServeFn's answer when it needs no wait (bytes in the page cache, a
  // refusal), nothing otherwise; called on the thread that moves messages.
  using ServeNowFn =
      std::function<std::optional<Result<std::vector<char>>>(int peer, const PackRead&)>;
  // A peer's notice: bytes its owner published, delivered once per receiving
  // rank, in the order the peer published them; called on the thread that
  // moves messages (keep it short, never call back into the transport's
  // Read/ReadSync from it). The bytes live only during the call.
  using NoticeFn = std::function<void(int peer, std::span<const char> notice)>;

  virtual ~Transport() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  // Collective, before Start(): every rank ends with `root`'s bytes. A rank
  // that never takes part makes it fail at `deadline` (ETIMEDOUT).
  virtual Status Broadcast(std::vector<char>* bytes, int root,
                           std::chrono::steady_clock::time_point deadline) = 0;
  // Collective, before Start(): every rank's `value`, indexed by rank. Fails
  // at `deadline` (ETIMEDOUT) when a rank never takes part.
  virtual Result<std::vector<int>> Gather(int value,
                                          std::chrono::steady_clock::time_point deadline) = 0;
  // Starts the threads that move messages and `server_threads` (>= 1) that
  // serve peers' reads. With `serve_now`, a small read it can answer at once
  // is answered by the thread that received it, without a hand-off to a
  // server thread. Not thread-safe; call once.
  virtual Status Start(ServeFn serve, int server_threads, ServeNowFn serve_now = {}) = 0;
  // Before Start: where peers' notices go (none set: they are counted and
  // dropped). Not thread-safe, like Start.
  virtual void OnNotice(NoticeFn fn) = 0;
  // After Start: `notice` to every other rank. EINVAL if larger than
  // kMaxNoticeBytes or empty; ECANCELED once stopped (or before Start);
  // EAGAIN if dropped for a peer that has too many notices still to send
  // (its link stalled; sent to the others all the same). Never blocks on the
  // network: the bytes are copied and queued.
  virtual Status Publish(std::span<const char> notice) = 0;
  // The same, to `peer` alone (another rank): EINVAL for this rank or one
  // out of range.
  virtual Status Send(int peer, std::span<const char> notice) = 0;
  // Asynchronous read from `peer` (never this rank).
  virtual void Read(int peer, const PackRead& read, std::chrono::steady_clock::time_point deadline,
                    ReplyFn done) = 0;
  // Collective while running: returns once every rank has called it, serving
  // peers meanwhile, so no rank stops while another still reads from it. A
  // rank that never arrives (dead) makes it time out at `deadline`.
  virtual Status Barrier(std::chrono::steady_clock::time_point deadline) = 0;
  // Stops the threads; outstanding reads complete with an error. Idempotent.
  virtual void Stop() = 0;
  // Messages and reads so far; null before Start().
  virtual const EndpointCounters* counters() const = 0;
};

// Publish's size check, shared by the implementations: EINVAL unless the
// notice holds 1 to kMaxNoticeBytes bytes.
Status CheckNoticeSize(std::span<const char> notice);
// Send's checks: the notice's size, and a peer that is another rank.
Status CheckSend(int rank, int size, int peer, std::span<const char> notice);
// Publish's result once queued: EAGAIN when dropped for `peers` > 0 peers.
Status NoticeDrops(int peers);

// Blocks until the read completes or its deadline passes.
Result<std::vector<char>> ReadSync(Transport& transport, int peer, const PackRead& read,
                                   std::chrono::steady_clock::time_point deadline);
// The same, handing the bytes to `take` (on the transport's thread, while this
// call waits) instead of returning a copy: the caller copies them once,
// straight to where they go. The read's status is take's. Once this call has
// returned, `take` is never called.
Status ReadSync(Transport& transport, int peer, const PackRead& read,
                std::chrono::steady_clock::time_point deadline,
                const std::function<Status(std::span<const char>)>& take);

}  // namespace clairfs::fs
