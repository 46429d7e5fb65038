// OpenWatcher: sees the opens of dataset files without a FUSE round trip.
//
// With opens answered by the daemon, every open() of the training job waits
// for a FUSE OPEN round trip - two context switches and a daemon thread that
// must get a CPU the training processes are using. The prefetcher only needs
// to learn of opens, not to answer them: an inotify IN_OPEN watch on each
// mounted directory that holds dataset files has the kernel queue one event per
// open (by any process) while the opener goes on at once. A thread reads the
// events in batches (it waits 10 ms after each, so it wakes once per batch, not
// per open) and reports the manifest node of each opened file, in the order
// of the opens. The mount can then decline opens (Vfs::DeclineOpens).
//
// Watches are added through the mount, so the daemon must already answer it
// (call Start from a thread other than the FUSE workers, after mounting). If
// the kernel's queue overflows (fs.inotify.max_queued_events), opens are lost:
// counted in overflows(); the planner treats the gap like any deviation.
//
// Thread-safety: Start, then the callback runs on the watcher's own thread;
// Stop (or the destructor) joins it. The counters may be read from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/status.hpp"
#include "partitioner/format/manifest.hpp"

namespace clairfs::fs {

class OpenWatcher {
 public:
  using OnOpenFn = std::function<void(uint32_t node)>;

  // Watches every directory under `mount` that holds a file with
  // in_dataset[node] != 0 (by manifest node). IOError naming the directory
  // when a watch cannot be added (ENOSPC: fs.inotify.max_user_watches).
  static Result<std::unique_ptr<OpenWatcher>> Start(
      const std::string& mount, std::shared_ptr<const format::Manifest> manifest,
      const std::vector<uint8_t>& in_dataset, OnOpenFn on_open);
  ~OpenWatcher();
  OpenWatcher(const OpenWatcher&) = delete;
  OpenWatcher& operator=(const OpenWatcher&) = delete;

  void Stop();
  uint64_t watches() const { return dirs_.size(); }
  uint64_t events() const { return events_.load(std::memory_order_relaxed); }
  uint64_t overflows() const { return overflows_.load(std::memory_order_relaxed); }

 private:
  OpenWatcher(std::shared_ptr<const format::Manifest> manifest, std::vector<uint8_t> in_dataset,
              OnOpenFn on_open, int inotify_fd, int stop_fd);
  void Run();
  void Handle(const char* buf, size_t len);

  const std::shared_ptr<const format::Manifest> manifest_;
  const std::vector<uint8_t> in_dataset_;
  const OnOpenFn on_open_;
  const int fd_;                            // inotify
  const int stop_fd_;                       // eventfd: Stop() wakes the thread
  std::unordered_map<int, uint32_t> dirs_;  // watch descriptor -> directory node
  std::atomic<uint64_t> events_{0}, overflows_{0};
  std::thread thread_;
};

}  // namespace clairfs::fs
