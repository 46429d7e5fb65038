// ReadWindow: the "next open is among the next W unread files" rule, as state
// a prefetcher can follow.
//
// Keras >= 3.3 feeds its base file order through a shuffle buffer of W
// entries, so at any moment the next file opened is one of the first W files
// of the base order that have not been read yet. ReadWindow keeps which files
// were read and answers that candidate set; with W = 1 it degenerates to a
// fixed order. Owns its copy of the base order. Thread-compatible: a caller
// that shares one across threads must lock it.
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.hpp"
#include "prefetch/order/sampler.hpp"

namespace clairfs::prefetch {

class ReadWindow {
 public:
  // `base_order` must be a permutation of 0..N-1 (N = its length) and
  // window >= 1; InvalidArgument otherwise.
  static Result<ReadWindow> Create(std::vector<Index> base_order, uint64_t window);

  uint64_t window() const { return window_; }
  uint64_t remaining() const { return remaining_; }

  // The candidates for the next open: up to `window` unread indices, in base order.
  std::vector<Index> Candidates() const;

  // Records that `index` was opened. Returns true when it was a candidate,
  // false when the reader left the rule (a deviation; it is recorded anyway).
  // InvalidArgument for an index outside the dataset or already read.
  Result<bool> MarkRead(Index index);

  // Forgets every read: the start of the next epoch.
  void Reset();

 private:
  ReadWindow(std::vector<Index> base_order, std::vector<uint64_t> position, uint64_t window);
  void AdvanceCursor();

  std::vector<Index> base_;
  std::vector<uint64_t> position_;  // index -> position in base_
  std::vector<bool> read_;          // by position
  uint64_t window_;
  uint64_t cursor_ = 0;  // first unread position
  uint64_t remaining_;
};

}  // namespace clairfs::prefetch
