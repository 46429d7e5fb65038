// SharedFsSource: the baseline policy, PyTorch's DataLoader reading every
// file where the dataset lies: each read is one request to the shared file
// system (its open latency and its share of the servers' bandwidth and
// IOPS), whatever node it comes from, every epoch. Single-thread.
#pragma once

#include <cstdint>
#include <vector>

#include "tools/sim/job.hpp"
#include "tools/sim/shared_device.hpp"

namespace clairfs::sim {

class SharedFsSource final : public DataSource {
 public:
  // `file_bytes`: each dataset file's size; both outlive this.
  SharedFsSource(SharedDevice* shared_fs, const std::vector<uint64_t>* file_bytes)
      : fs_(shared_fs), bytes_(file_bytes) {}
  void Read(uint32_t node, uint64_t file, EventLoop::Fn done) override;

 private:
  SharedDevice* fs_;
  const std::vector<uint64_t>* bytes_;
};

}  // namespace clairfs::sim
