#include "partitioner/pack/progress.hpp"

#include <unistd.h>

#include <cstdio>

namespace clairfs::pack {

std::string HumanBytes(double bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int u = 0;
  while (bytes >= 1024 && u < 5) {
    bytes /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", bytes, kUnits[u]);
  return buf;
}

bool Progress::StderrIsTerminal() { return ::isatty(STDERR_FILENO) == 1; }

Progress::Progress(std::string verb, uint64_t total_files, uint64_t total_bytes, bool enabled,
                   std::chrono::milliseconds log_every)
    : verb_(std::move(verb)),
      total_files_(total_files),
      total_bytes_(total_bytes),
      start_(std::chrono::steady_clock::now()) {
  if (!enabled) return;
  terminal_ = StderrIsTerminal();
  const auto every = terminal_ ? std::chrono::milliseconds(250) : log_every;
  thread_ = std::thread([this, every] {
    MutexLock lock(&mu_);
    for (auto next = std::chrono::steady_clock::now() + every; !stop_;) {
      if (cv_.WaitUntil(&lock, next)) continue;  // woken: stopping, or spuriously
      Draw();
      next += every;
    }
  });
}

Progress::~Progress() { Stop(); }

void Progress::Stop() {
  if (!thread_.joinable()) return;
  {
    MutexLock lock(&mu_);
    stop_ = true;
  }
  cv_.NotifyAll();
  thread_.join();
  if (terminal_) std::fprintf(stderr, "\r\033[K");
}

void Progress::Draw() {
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const uint64_t files = files_.load(), bytes = bytes_.load();
  const double rate = secs > 0 ? bytes / secs : 0;
  char eta[32] = "--:--";
  if (rate > 0 && total_bytes_ >= bytes) {
    const auto left = static_cast<uint64_t>((total_bytes_ - bytes) / rate);
    std::snprintf(eta, sizeof eta, "%lu:%02lu", left / 60, left % 60);
  }
  const int pct = total_bytes_ ? static_cast<int>(100.0 * bytes / total_bytes_) : 100;
  std::fprintf(stderr, "%s%s %3d%%  %lu/%lu files  %s/%s  %s/s  ETA %s%s",
               terminal_ ? "\r\033[K" : "", verb_.c_str(), pct, files, total_files_,
               HumanBytes(bytes).c_str(), HumanBytes(total_bytes_).c_str(),
               HumanBytes(rate).c_str(), eta, terminal_ ? "" : "\n");
  std::fflush(stderr);
}

}  // namespace clairfs::pack
