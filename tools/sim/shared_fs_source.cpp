#include "tools/sim/shared_fs_source.hpp"

#include <utility>

namespace clairfs::sim {

void SharedFsSource::Read(uint32_t node, uint64_t file, EventLoop::Fn done) {
  const uint64_t bytes = (*bytes_)[file];
  counters_.reads++;
  counters_.shared_fs_bytes += bytes;
  fs_->Transfer(bytes, std::move(done));
}

}  // namespace clairfs::sim
