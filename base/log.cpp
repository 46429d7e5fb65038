#include "base/log.hpp"

#include <unistd.h>

#include <atomic>

namespace clairfs {
namespace {

std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};
std::string& Prefix() {
  static std::string prefix = "clairfsd";
  return prefix;
}

}  // namespace

bool ParseLogLevel(std::string_view text, LogLevel* out) {
  static constexpr LogLevel kAll[] = {LogLevel::kError, LogLevel::kWarn, LogLevel::kInfo,
                                      LogLevel::kDebug};
  for (LogLevel l : kAll) {
    if (text == LogLevelName(l)) {
      *out = l;
      return true;
    }
  }
  return false;
}

const char* LogLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kError:
      return "error";
    case LogLevel::kWarn:
      return "warn";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kDebug:
      return "debug";
  }
  return "info";
}

void SetLogLevel(LogLevel level) { g_level.store(static_cast<int>(level)); }

void SetLogPrefix(std::string prefix) { Prefix() = std::move(prefix); }

bool LogEnabled(LogLevel level) {
  return static_cast<int>(level) <= g_level.load(std::memory_order_relaxed);
}

void Log(LogLevel level, const std::string& message) {
  if (!LogEnabled(level)) return;
  std::string line = Prefix() + ": ";
  if (level != LogLevel::kInfo) {
    line += LogLevelName(level);
    line += ": ";
  }
  line += message;
  line += '\n';
  // One write per line; a short write to stderr is not worth a retry loop.
  ssize_t n = ::write(STDERR_FILENO, line.data(), line.size());
  (void)n;
}

}  // namespace clairfs
