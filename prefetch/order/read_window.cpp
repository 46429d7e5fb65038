#include "prefetch/order/read_window.hpp"

#include <utility>

namespace clairfs::prefetch {

Result<ReadWindow> ReadWindow::Create(std::vector<Index> base_order, uint64_t window) {
  if (window == 0) return Status::InvalidArgument("ReadWindow: window must be at least 1");
  constexpr uint64_t kUnset = ~uint64_t{0};
  std::vector<uint64_t> position(base_order.size(), kUnset);
  for (uint64_t p = 0; p < base_order.size(); ++p) {
    Index i = base_order[p];
    if (i >= base_order.size() || position[i] != kUnset) {
      return Status::InvalidArgument("ReadWindow: base order is not a permutation (index " +
                                     std::to_string(i) + " at position " + std::to_string(p) + ")");
    }
    position[i] = p;
  }
  return ReadWindow(std::move(base_order), std::move(position), window);
}

ReadWindow::ReadWindow(std::vector<Index> base_order, std::vector<uint64_t> position,
                       uint64_t window)
    : base_(std::move(base_order)),
      position_(std::move(position)),
      read_(base_.size(), false),
      window_(window),
      remaining_(base_.size()) {}

std::vector<Index> ReadWindow::Candidates() const {
  std::vector<Index> out;
  for (uint64_t p = cursor_; p < base_.size() && out.size() < window_; ++p) {
    if (!read_[p]) out.push_back(base_[p]);
  }
  return out;
}

Result<bool> ReadWindow::MarkRead(Index index) {
  if (index >= base_.size()) {
    return Status::InvalidArgument("ReadWindow: index " + std::to_string(index) +
                                   " is outside the dataset");
  }
  uint64_t p = position_[index];
  if (read_[p]) {
    return Status::InvalidArgument("ReadWindow: index " + std::to_string(index) +
                                   " was already read this epoch");
  }
  // A candidate is unread and has fewer than `window` unread files before it.
  uint64_t unread_before = 0;
  for (uint64_t q = cursor_; q < p && unread_before < window_; ++q) {
    if (!read_[q]) ++unread_before;
  }
  read_[p] = true;
  --remaining_;
  AdvanceCursor();
  return unread_before < window_;
}

void ReadWindow::Reset() {
  read_.assign(base_.size(), false);
  cursor_ = 0;
  remaining_ = base_.size();
}

void ReadWindow::AdvanceCursor() {
  while (cursor_ < base_.size() && read_[cursor_]) ++cursor_;
}

}  // namespace clairfs::prefetch
