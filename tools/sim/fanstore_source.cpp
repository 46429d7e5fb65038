#include "tools/sim/fanstore_source.hpp"

#include <algorithm>
#include <memory>
#include <utility>

namespace clairfs::sim {

FanStoreSource::FanStoreSource(EventLoop* loop, SharedDevice* shared_fs,
                               const std::vector<uint64_t>* file_bytes, uint32_t nodes,
                               uint32_t partitions, const NodeSpec& node)
    : loop_(loop),
      fs_(shared_fs),
      bytes_(file_bytes),
      nodes_(std::max(nodes, 1u)),
      partitions_(std::max(partitions, 1u)) {
  for (uint32_t n = 0; n < nodes; ++n) {
    ssd_.push_back(std::make_unique<SharedDevice>(loop, node.ssd));
    link_.push_back(std::make_unique<SharedDevice>(loop, node.link));
  }
}

uint32_t FanStoreSource::HomeOf(uint64_t file) const {
  const uint64_t partition = file * partitions_ / bytes_->size();
  return static_cast<uint32_t>(partition % nodes_);
}

void FanStoreSource::StartEpoch(uint32_t epoch) {
  if (epoch != 0) return;
  // Each partition: read from the shared file system, written to its home's SSD.
  std::vector<uint64_t> partition_bytes(partitions_, 0);
  for (uint64_t f = 0; f < bytes_->size(); ++f) {
    partition_bytes[f * partitions_ / bytes_->size()] += (*bytes_)[f];
  }
  auto left = std::make_shared<uint32_t>(partitions_);
  const double start = loop_->now();
  for (uint32_t p = 0; p < partitions_; ++p) {
    SharedDevice* ssd = ssd_[p % nodes_].get();
    const uint64_t n = partition_bytes[p];
    fs_->Transfer(
        n,
        [this, ssd, n, left, start] {
          ssd->Transfer(n, [this, left, start] {
            if (--*left > 0) return;
            staged_ = true;
            staged_at_ = loop_->now() - start;
            for (auto& read : held_) read();
            held_.clear();
          });
        },
        static_cast<int>(p % nodes_));
  }
}

void FanStoreSource::Read(uint32_t node, uint64_t file, EventLoop::Fn done) {
  if (!staged_) {
    held_.push_back([this, node, file, done = std::move(done)]() mutable {
      Serve(node, file, std::move(done));
    });
    return;
  }
  Serve(node, file, std::move(done));
}

void FanStoreSource::Serve(uint32_t node, uint64_t file, EventLoop::Fn done) {
  const uint64_t n = (*bytes_)[file];
  const uint32_t home = HomeOf(file);
  counters_.reads++;
  if (home == node) {
    counters_.local_bytes += n;
    ssd_[node]->Transfer(n, std::move(done));
    return;
  }
  counters_.peer_bytes += n;
  SharedDevice* link = link_[home].get();
  ssd_[home]->Transfer(
      n, [link, n, done = std::move(done)]() mutable { link->Transfer(n, std::move(done)); });
}

}  // namespace clairfs::sim
