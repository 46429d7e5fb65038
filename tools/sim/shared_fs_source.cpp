#include "tools/sim/shared_fs_source.hpp"

#include <algorithm>
#include <utility>

namespace clairfs::sim {

SharedFsSource::SharedFsSource(EventLoop* loop, SharedDevice* shared_fs,
                               const std::vector<uint64_t>* file_bytes, uint32_t nodes,
                               uint64_t page_cache, uint32_t reads_per_file)
    : loop_(loop),
      fs_(shared_fs),
      bytes_(file_bytes),
      page_cache_(page_cache),
      reads_per_file_(std::max<uint32_t>(reads_per_file, 1)),
      cache_(nodes),
      reading_(nodes) {}

void SharedFsSource::Read(uint32_t node, uint64_t file, EventLoop::Fn done) {
  const uint64_t bytes = (*bytes_)[file];
  counters_.reads++;
  PageCache& c = cache_[node];
  if (c.where.count(file) != 0) {
    counters_.ram_bytes += bytes;
    Keep(node, file);
    loop_->After(0, std::move(done));
    return;
  }
  const bool cached = bytes <= page_cache_;
  if (cached) {
    auto joined = reading_[node].find(file);
    if (joined != reading_[node].end()) {
      counters_.ram_bytes += bytes;
      joined->second.push_back(std::move(done));
      return;
    }
    reading_[node][file];
  }
  counters_.shared_fs_bytes += bytes;
  Request(node, bytes, 0, [this, node, file, cached, done = std::move(done)] {
    Keep(node, file);
    std::vector<EventLoop::Fn> waiting;
    if (cached) {
      auto it = reading_[node].find(file);
      waiting = std::move(it->second);
      reading_[node].erase(it);
    }
    done();
    for (auto& w : waiting) w();
  });
}

void SharedFsSource::Request(uint32_t node, uint64_t bytes, uint32_t i, EventLoop::Fn done) {
  // The bytes split evenly, the last request taking what is left over.
  const uint64_t part = bytes / reads_per_file_;
  const int client = static_cast<int>(node);
  if (i + 1 == reads_per_file_) return fs_->Transfer(bytes - part * i, std::move(done), client);
  fs_->Transfer(
      part,
      [this, node, bytes, i, done = std::move(done)]() mutable {
        Request(node, bytes, i + 1, std::move(done));
      },
      client);
}

void SharedFsSource::Keep(uint32_t node, uint64_t file) {
  const uint64_t bytes = (*bytes_)[file];
  if (bytes > page_cache_) return;
  PageCache& c = cache_[node];
  auto it = c.where.find(file);
  if (it != c.where.end()) {
    c.files.splice(c.files.begin(), c.files, it->second);
    return;
  }
  while (c.bytes + bytes > page_cache_) {
    const uint64_t old = c.files.back();
    c.bytes -= (*bytes_)[old];
    c.where.erase(old);
    c.files.pop_back();
  }
  c.files.push_front(file);
  c.where.emplace(file, c.files.begin());
  c.bytes += bytes;
}

}  // namespace clairfs::sim
