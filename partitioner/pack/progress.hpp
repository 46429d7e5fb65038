// Progress of a long run on stderr: files, bytes, rate and ETA. On a terminal
// one line redrawn a few times a second; otherwise (a batch job's log) a plain
// line every `log_every`, so a run shorter than that prints nothing.
// Add() is thread-safe; the drawing thread is owned and joined by Stop().
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

#include "base/mutex.hpp"

namespace clairfs::pack {

class Progress {
 public:
  // `enabled` false makes every call a no-op (no thread is started).
  Progress(std::string verb, uint64_t total_files, uint64_t total_bytes, bool enabled,
           std::chrono::milliseconds log_every = std::chrono::seconds(30));
  ~Progress();
  void Add(uint64_t files, uint64_t bytes) {
    files_.fetch_add(files, std::memory_order_relaxed);
    bytes_.fetch_add(bytes, std::memory_order_relaxed);
  }
  // Stops drawing and clears the line.
  void Stop();

  static bool StderrIsTerminal();

 private:
  void Draw();
  std::string verb_;
  bool terminal_ = false;
  uint64_t total_files_, total_bytes_;
  std::atomic<uint64_t> files_{0}, bytes_{0};
  std::chrono::steady_clock::time_point start_;
  Mutex mu_;
  CondVar cv_;
  bool stop_ CLAIRFS_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

// "1.5 GiB", "12.0 KiB", "17 B".
std::string HumanBytes(double bytes);

}  // namespace clairfs::pack
