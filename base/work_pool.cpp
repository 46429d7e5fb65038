#include "base/work_pool.hpp"

#include "base/thread_name.hpp"

namespace clairfs {

WorkPool::WorkPool(std::string name, unsigned threads, size_t max_queued)
    : name_(std::move(name)), max_queued_(max_queued) {
  for (unsigned i = 0; i < std::max(threads, 1u); ++i) workers_.emplace_back([this] { Work(); });
}

WorkPool::~WorkPool() { Stop(false); }

bool WorkPool::TrySubmit(std::function<void()> task) {
  {
    MutexLock lock(&mu_);
    if (stopping_ || queue_.size() >= max_queued_) return false;
    queue_.push_back(std::move(task));
  }
  ready_.NotifyOne();
  return true;
}

void WorkPool::Stop(bool run_queued) {
  std::deque<std::function<void()>> dropped;  // destroyed after the lock is released
  {
    MutexLock lock(&mu_);
    stopping_ = true;
    if (!run_queued) dropped.swap(queue_);
  }
  ready_.NotifyAll();
  for (std::thread& t : workers_) {
    if (t.joinable()) t.join();
  }
}

size_t WorkPool::queued() const {
  MutexLock lock(&mu_);
  return queue_.size();
}

void WorkPool::Work() {
  NameThread(name_.c_str());
  MutexLock lock(&mu_);
  for (;;) {
    while (!stopping_ && queue_.empty()) ready_.Wait(&lock);
    if (queue_.empty()) return;  // stopping, and nothing left to run
    std::function<void()> task = std::move(queue_.front());
    queue_.pop_front();
    lock.Unlock();
    task();
    lock.Lock();
  }
}

}  // namespace clairfs
