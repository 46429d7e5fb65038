// PeerAhead: ranges of peers' packs asked for before a reader wants them.
//
// A reader moving frame after frame through a large file homed on another node
// would wait for one round trip per frame, one after another, each including
// the owner's read of its copy. Start() sends the read of a range the reader
// will want soon (Transport::Read, asynchronous) and keeps its answer; Take()
// gives a later read of a range inside it those bytes, waiting for the answer
// if it is still on its way. So a sequential reader keeps several frames in
// flight, and the owner reads them side by side.
//
// Bounded: at most `max_bytes` of ranges asked for and not taken, and
// kMaxRanges ranges; past either the oldest is dropped (an answer still on
// its way is thrown away when it comes). A range is taken once. Nothing here
// is an error: an answer that failed, or a range dropped, leaves the reader to
// read as it would have (Take says what happened). The bytes are unverified,
// as every peer's answer: the reader checks them.
// Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>

#include "base/mutex.hpp"
#include "base/status.hpp"
#include "fs/net/transport.hpp"

namespace clairfs::fs {

struct PeerAheadCounters {
  std::atomic<uint64_t> reads{0}, bytes{0};  // ranges asked for ahead, and their bytes
  std::atomic<uint64_t> taken{0};            // of them, given to a reader
  std::atomic<uint64_t> dropped{0};          // dropped for room before a reader came
  std::atomic<uint64_t> failed{0};           // wanted by a reader, but their answer failed
};

class PeerAhead {
 public:
  static constexpr size_t kMaxBytes = 32u << 20;  // about 8 readers of 1 MiB frames, 4 ahead
  static constexpr size_t kMaxRanges = 256;

  // `transport` is not owned and outlives the reads (Stop() completes them).
  PeerAhead(Transport* transport, std::chrono::milliseconds timeout, size_t max_bytes = kMaxBytes);

  // Asks `owner` for bytes [offset, offset + length) of `partition`'s pack,
  // unless a range asked for already overlaps them, or they alone exceed the
  // budget.
  void Start(int owner, uint32_t partition, uint64_t offset, uint32_t length);

  struct Taken {
    bool found = false;  // a range asked for held [offset, offset + size)
    Status status;       // its answer: OK once `dst` holds the bytes
    int owner = -1;      // the peer it was asked of
  };
  // The bytes [offset, offset + size) of `partition`'s pack into `dst`, from a
  // range asked for ahead (waiting for its answer until its deadline).
  Taken Take(uint32_t partition, uint64_t offset, size_t size, void* dst);

  const PeerAheadCounters& counters() const { return counters_; }

 private:
  struct Range;
  struct Shared;
  Transport* const transport_;
  const std::chrono::milliseconds timeout_;
  const size_t max_bytes_;
  const std::shared_ptr<Shared> shared_;  // also held by the answers on their way
  PeerAheadCounters counters_;
};

}  // namespace clairfs::fs
