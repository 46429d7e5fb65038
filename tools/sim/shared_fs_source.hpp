// SharedFsSource: the baseline policy, PyTorch's DataLoader reading every
// file where the dataset lies: each file read is `reads_per_file` requests
// to the shared file system one after another (the loader's read calls, each
// with the open latency and its share of the servers' bandwidth and IOPS),
// whatever node it comes from, every epoch. Single-thread.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "tools/sim/job.hpp"
#include "tools/sim/shared_device.hpp"

namespace clairfs::sim {

class SharedFsSource final : public DataSource {
 public:
  // `file_bytes`: each dataset file's size; both outlive this.
  SharedFsSource(SharedDevice* shared_fs, const std::vector<uint64_t>* file_bytes,
                 uint32_t reads_per_file = 1)
      : fs_(shared_fs),
        bytes_(file_bytes),
        reads_per_file_(std::max<uint32_t>(reads_per_file, 1)) {}
  void Read(uint32_t node, uint64_t file, EventLoop::Fn done) override;

 private:
  // Request `i` of `reads_per_file_` for a file of `bytes`, then the next.
  void Request(uint64_t bytes, uint32_t i, EventLoop::Fn done);

  SharedDevice* fs_;
  const std::vector<uint64_t>* bytes_;
  uint32_t reads_per_file_;
};

}  // namespace clairfs::sim
