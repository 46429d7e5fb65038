// WorkPool: a fixed set of threads running submitted tasks in the order they
// were submitted, behind a bounded queue. The FUSE request path hands it the
// requests that must wait (a pack read, decompression, a peer) so the threads
// reading /dev/fuse keep answering the ones that need not (docs/fuse.md,
// "The request path").
//
// Thread-safe.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "base/mutex.hpp"

namespace clairfs {

class WorkPool {
 public:
  // `threads` >= 1 workers named `name` (at most 15 characters); at most
  // `max_queued` tasks wait for a worker.
  WorkPool(std::string name, unsigned threads, size_t max_queued);
  ~WorkPool();  // Stop(false)
  WorkPool(const WorkPool&) = delete;
  WorkPool& operator=(const WorkPool&) = delete;

  // Queues `task`. False, and the task not taken, when `max_queued` tasks are
  // waiting already or the pool was stopped: the caller runs it itself, which
  // is the back-pressure.
  bool TrySubmit(std::function<void()> task);
  // Ends the workers once the tasks they are running return, after running
  // the queued ones too if `run_queued`, else dropping them. Idempotent.
  void Stop(bool run_queued);
  // Tasks waiting for a worker (for stats and tests).
  size_t queued() const;

 private:
  void Work();

  const std::string name_;
  const size_t max_queued_;
  mutable Mutex mu_;
  CondVar ready_;
  std::deque<std::function<void()>> queue_ CLAIRFS_GUARDED_BY(mu_);
  bool stopping_ CLAIRFS_GUARDED_BY(mu_) = false;
  std::vector<std::thread> workers_;  // set by the constructor, joined by Stop()
};

}  // namespace clairfs
