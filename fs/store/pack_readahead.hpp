// PackReadahead: asks the kernel to read whole packs into its page cache in
// the background, so that a first epoch in random order is served at the
// disk's sequential speed instead of its random-read speed.
//
// Packs are queued on their first use (the PosixPackStore over the dataset
// directory calls Request; config pack_readahead) and read ahead one at a time
// by one owned thread with posix_fadvise(WILLNEED), in 16 MiB steps, until the
// byte budget is spent. The page cache stays reclaimable: under memory
// pressure the kernel drops these pages first, and a read then simply goes to
// the disk. Staged copies (local_dir) are not read ahead: staging writes them.
// Thread-safe; the destructor stops and joins the thread.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <thread>

#include "base/mutex.hpp"

namespace clairfs::fs {

class PackReadahead {
 public:
  // budget_bytes: the most pack bytes ever read ahead (0 disables it).
  explicit PackReadahead(uint64_t budget_bytes);
  ~PackReadahead();
  PackReadahead(const PackReadahead&) = delete;
  PackReadahead& operator=(const PackReadahead&) = delete;

  // Queues `path` (`bytes` long) unless the budget would be exceeded.
  void Request(const std::string& path, uint64_t bytes);
  uint64_t requested_bytes() const;

 private:
  void Run(std::stop_token stop);

  const uint64_t budget_;
  mutable Mutex mu_;  // leaf lock
  CondVar cv_;
  std::deque<std::string> queue_ CLAIRFS_GUARDED_BY(mu_);
  uint64_t requested_ CLAIRFS_GUARDED_BY(mu_) = 0;
  bool stopping_ CLAIRFS_GUARDED_BY(mu_) = false;
  std::jthread worker_;  // last member: started after, stopped before the rest
};

}  // namespace clairfs::fs
