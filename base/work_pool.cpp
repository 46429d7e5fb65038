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
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ || queue_.size() >= max_queued_) return false;
    queue_.push_back(std::move(task));
  }
  ready_.notify_one();
  return true;
}

void WorkPool::Stop(bool run_queued) {
  std::deque<std::function<void()>> dropped;  // destroyed after the lock is released
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    if (!run_queued) dropped.swap(queue_);
  }
  ready_.notify_all();
  for (std::thread& t : workers_) {
    if (t.joinable()) t.join();
  }
}

size_t WorkPool::queued() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queue_.size();
}

void WorkPool::Work() {
  NameThread(name_.c_str());
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    ready_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and nothing left to run
    std::function<void()> task = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    task();
    lock.lock();
  }
}

}  // namespace clairfs
