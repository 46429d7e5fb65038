// SharedFsSource: the baseline policy, PyTorch's DataLoader reading every
// file where the dataset lies. A file read is `reads_per_file` requests to
// the shared file system one after another (the loader's read calls, each
// with the open latency and its share of the servers' bandwidth and IOPS),
// unless the node's page cache still holds it: each node keeps the files it
// read, least recently read out first, up to `page_cache` bytes (the
// kernel's cache, as a client of a parallel file system has it). A read of a
// file the node is reading already waits for that read (the kernel's page
// under I/O) and is served from the cache. Single-thread.
#pragma once

#include <cstdint>
#include <list>
#include <unordered_map>
#include <vector>

#include "tools/sim/event_loop.hpp"
#include "tools/sim/job.hpp"
#include "tools/sim/shared_device.hpp"

namespace clairfs::sim {

class SharedFsSource final : public DataSource {
 public:
  // `file_bytes`: each dataset file's size; it, `loop` and `shared_fs`
  // outlive this. `page_cache`: bytes per node (0: every read goes out).
  SharedFsSource(EventLoop* loop, SharedDevice* shared_fs, const std::vector<uint64_t>* file_bytes,
                 uint32_t nodes, uint64_t page_cache, uint32_t reads_per_file = 1);
  void Read(uint32_t node, uint64_t file, EventLoop::Fn done) override;

 private:
  struct PageCache {
    std::list<uint64_t> files;  // most recently read first
    std::unordered_map<uint64_t, std::list<uint64_t>::iterator> where;
    uint64_t bytes = 0;
  };
  // Request `i` of `reads_per_file_` for `node`'s file of `bytes`, then the next.
  void Request(uint32_t node, uint64_t bytes, uint32_t i, EventLoop::Fn done);
  // `file` was just read on `node`: it goes to the front of the node's cache.
  void Keep(uint32_t node, uint64_t file);

  EventLoop* loop_;
  SharedDevice* fs_;
  const std::vector<uint64_t>* bytes_;
  uint64_t page_cache_;
  uint32_t reads_per_file_;
  std::vector<PageCache> cache_;  // per node
  // Per node: the files being read into its cache, and the reads waiting for each.
  std::vector<std::unordered_map<uint64_t, std::vector<EventLoop::Fn>>> reading_;
};

}  // namespace clairfs::sim
