// Log lines for clairfsd: one line per event on stderr, prefixed "clairfsd: ".
//
// The level is process-wide (set once from the config at start); Log() is
// thread-safe: each line is formatted first and written with one write(2), so
// lines from concurrent FUSE workers never interleave.
#pragma once

#include <string>
#include <string_view>

namespace clairfs {

enum class LogLevel { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3 };

// "error", "warn", "info", "debug"; false for anything else.
bool ParseLogLevel(std::string_view text, LogLevel* out);
const char* LogLevelName(LogLevel level);

void SetLogLevel(LogLevel level);
// Replaces "clairfsd" at the start of each line (e.g. "clairfsd[3]" for rank 3).
// Call once at start, before other threads log.
void SetLogPrefix(std::string prefix);
bool LogEnabled(LogLevel level);
// Writes "<prefix>: <level>: <message>\n" when `level` is enabled.
void Log(LogLevel level, const std::string& message);

}  // namespace clairfs
