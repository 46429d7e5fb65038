#include "fs/dist/peer_ahead.hpp"

#include <cstring>
#include <vector>

namespace clairfs::fs {

struct PeerAhead::Range {
  uint32_t partition;
  uint64_t offset;
  uint32_t length;
  int owner;
  std::chrono::steady_clock::time_point deadline;
  // Written by the answer, under Shared::mu; read by the taker once `done`.
  bool done = false;
  bool dropped = false;  // no one will take it: its bytes need not be kept
  Status status;
  std::vector<char> bytes;
};

struct PeerAhead::Shared {
  Mutex mu;
  CondVar answered;
  std::deque<std::shared_ptr<Range>> ranges CLAIRFS_GUARDED_BY(mu);  // oldest first
  size_t bytes CLAIRFS_GUARDED_BY(mu) = 0;                           // their lengths
};

PeerAhead::PeerAhead(Transport* transport, std::chrono::milliseconds timeout, size_t max_bytes)
    : transport_(transport),
      timeout_(timeout),
      max_bytes_(max_bytes),
      shared_(std::make_shared<Shared>()) {}

void PeerAhead::Start(int owner, uint32_t partition, uint64_t offset, uint32_t length) {
  if (length == 0 || length > max_bytes_ || length > kMaxReadBytes) return;
  auto range = std::make_shared<Range>();
  range->partition = partition;
  range->offset = offset;
  range->length = length;
  range->owner = owner;
  range->deadline = std::chrono::steady_clock::now() + timeout_;
  {
    MutexLock lock(&shared_->mu);
    for (const auto& r : shared_->ranges) {
      if (r->partition == partition && r->offset < offset + length &&
          offset < r->offset + r->length) {
        return;  // asked for already (a reader's next read hints what it hinted before)
      }
    }
    while (!shared_->ranges.empty() &&
           (shared_->bytes + length > max_bytes_ || shared_->ranges.size() >= kMaxRanges)) {
      const std::shared_ptr<Range>& oldest = shared_->ranges.front();
      oldest->dropped = true;
      oldest->bytes.clear();
      shared_->bytes -= oldest->length;
      shared_->ranges.pop_front();
      counters_.dropped++;
    }
    shared_->ranges.push_back(range);
    shared_->bytes += length;
  }
  counters_.reads++;
  counters_.bytes += length;
  std::shared_ptr<Shared> shared = shared_;
  transport_->Read(owner, {partition, offset, length}, range->deadline,
                   [shared, range](Result<std::span<const char>> answer) {
                     MutexLock lock(&shared->mu);
                     if (!answer.ok()) {
                       range->status = answer.status();
                     } else if (answer->size() != range->length) {
                       range->status = Status::Corruption("an answer of the wrong size");
                     } else if (!range->dropped) {
                       range->bytes.assign(answer->begin(), answer->end());
                     }
                     range->done = true;
                     shared->answered.NotifyAll();
                   });
}

PeerAhead::Taken PeerAhead::Take(uint32_t partition, uint64_t offset, size_t size, void* dst) {
  Taken out;
  std::shared_ptr<Range> range;
  {
    MutexLock lock(&shared_->mu);
    auto& ranges = shared_->ranges;
    for (auto it = ranges.begin(); it != ranges.end(); ++it) {
      const Range& r = **it;
      if (r.partition == partition && r.offset <= offset && offset + size <= r.offset + r.length) {
        range = *it;
        shared_->bytes -= r.length;
        ranges.erase(it);
        break;
      }
    }
    if (range == nullptr) return out;
    // The transport answers every read by its deadline; the margin only keeps
    // a transport bug from hanging a FUSE worker (as ReadSync's).
    const auto give_up = range->deadline + std::chrono::seconds(5);
    while (!range->done && shared_->answered.WaitUntil(&lock, give_up)) {
    }
    out.found = true;
    out.owner = range->owner;
    if (!range->done) {
      range->dropped = true;
      out.status = Status::IOError(
          "a read asked of peer " + std::to_string(range->owner) + " ahead never completed",
          ETIMEDOUT);
    } else {
      out.status = range->status;
    }
  }
  // Done: the answer wrote its last and no one else holds the range.
  if (out.status.ok()) {
    if (size > 0) std::memcpy(dst, range->bytes.data() + (offset - range->offset), size);
    counters_.taken++;
  } else {
    counters_.failed++;
  }
  return out;
}

}  // namespace clairfs::fs
