// A progress line on stderr for long runs: files, bytes, rate and ETA,
// redrawn a few times a second, only when stderr is a terminal.
// Add() is thread-safe; the drawing thread is owned and joined by Stop().
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

namespace clairfs::pack {

class Progress {
 public:
  // `enabled` false makes every call a no-op (no thread is started).
  Progress(std::string verb, uint64_t total_files, uint64_t total_bytes, bool enabled);
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
  uint64_t total_files_, total_bytes_;
  std::atomic<uint64_t> files_{0}, bytes_{0};
  std::chrono::steady_clock::time_point start_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

// "1.5 GiB", "12.0 KiB", "17 B".
std::string HumanBytes(double bytes);

}  // namespace clairfs::pack
