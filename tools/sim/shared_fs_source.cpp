#include "tools/sim/shared_fs_source.hpp"

#include <utility>

namespace clairfs::sim {

void SharedFsSource::Read(uint32_t node, uint64_t file, EventLoop::Fn done) {
  const uint64_t bytes = (*bytes_)[file];
  counters_.reads++;
  counters_.shared_fs_bytes += bytes;
  Request(bytes, 0, std::move(done));
}

void SharedFsSource::Request(uint64_t bytes, uint32_t i, EventLoop::Fn done) {
  // The bytes split evenly, the last request taking what is left over.
  const uint64_t part = bytes / reads_per_file_;
  if (i + 1 == reads_per_file_) return fs_->Transfer(bytes - part * i, std::move(done));
  fs_->Transfer(part, [this, bytes, i, done = std::move(done)]() mutable {
    Request(bytes, i + 1, std::move(done));
  });
}

}  // namespace clairfs::sim
