#include "fs/store/pack_readahead.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstring>

#include "base/log.hpp"

namespace clairfs::fs {

PackReadahead::PackReadahead(uint64_t budget_bytes) : budget_(budget_bytes) {
  if (budget_ > 0) worker_ = std::jthread([this](std::stop_token stop) { Run(stop); });
}

PackReadahead::~PackReadahead() {
  if (worker_.joinable()) {
    {
      MutexLock lock(&mu_);
      stopping_ = true;
    }
    worker_.request_stop();  // ends the steps of a pack being read ahead
    cv_.NotifyAll();
    worker_.join();
  }
}

void PackReadahead::Request(const std::string& path, uint64_t bytes) {
  if (budget_ == 0) return;
  {
    MutexLock lock(&mu_);
    if (requested_ + bytes > budget_) {
      Log(LogLevel::kDebug, "pack_readahead budget spent; not reading ahead " + path);
      return;
    }
    requested_ += bytes;
    queue_.push_back(path);
  }
  cv_.NotifyOne();
}

uint64_t PackReadahead::requested_bytes() const {
  MutexLock lock(&mu_);
  return requested_;
}

void PackReadahead::Run(std::stop_token stop) {
  constexpr off_t kStep = off_t{16} << 20;
  while (!stop.stop_requested()) {
    std::string path;
    {
      MutexLock lock(&mu_);
      while (!stopping_ && queue_.empty()) cv_.Wait(&lock);
      if (stopping_) return;
      path = std::move(queue_.front());
      queue_.pop_front();
    }
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      Log(LogLevel::kWarn, "pack_readahead: open " + path + ": " + std::strerror(errno));
      continue;
    }
    const off_t size = ::lseek(fd, 0, SEEK_END);
    // WILLNEED queues the reads and returns; the steps let a stop interrupt
    // a large pack, and keep the request queue from being flooded at once.
    for (off_t off = 0; off < size && !stop.stop_requested(); off += kStep) {
      ::posix_fadvise(fd, off, kStep, POSIX_FADV_WILLNEED);
    }
    ::close(fd);
    Log(LogLevel::kDebug, "pack_readahead: " + path + " queued");
  }
}

}  // namespace clairfs::fs
