// Runs a function with stderr (file descriptor 2) sent to a temporary file and
// returns what was written there: for tests of what a component logs. Not
// thread-safe with respect to other writers of stderr; call from the test's
// main thread.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>

namespace clairfs::testing {

inline std::string CaptureStderr(const std::function<void()>& run) {
  char path[] = "/tmp/clairfs-stderr.XXXXXX";
  const int fd = ::mkstemp(path);
  if (fd < 0) return "(mkstemp failed)";
  std::fflush(stderr);
  const int saved = ::dup(STDERR_FILENO);
  ::dup2(fd, STDERR_FILENO);
  ::close(fd);
  run();
  std::fflush(stderr);
  ::dup2(saved, STDERR_FILENO);
  ::close(saved);
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ::unlink(path);
  return text;
}

}  // namespace clairfs::testing
