// One check's verdict and the doctor's two ways of printing all of them.
// Value types and pure functions; thread-compatible.
#pragma once

#include <string>
#include <vector>

namespace clairfs::doctor {

struct Check {
  enum class State { kOk, kProblem, kSkipped };
  std::string name;  // "dev_fuse", "inotify", ... (docs/doctor.md lists them)
  State state = State::kOk;
  std::string message;  // what was found, naming the path or the numbers
  std::string fix;      // a problem's remedy: a command, a config key, or whom to ask

  static Check Ok(std::string name, std::string message) {
    return {std::move(name), State::kOk, std::move(message), ""};
  }
  static Check Problem(std::string name, std::string message, std::string fix) {
    return {std::move(name), State::kProblem, std::move(message), std::move(fix)};
  }
  // Not run: an input it needs was not given. Never counts as passed.
  static Check Skipped(std::string name, std::string message) {
    return {std::move(name), State::kSkipped, std::move(message), ""};
  }
  bool problem() const { return state == State::kProblem; }
};

// One line per check ("ok", "PROBLEM" or "skipped", its name and message),
// a problem's fix on the next line.
std::string TextReport(const std::vector<Check>& checks);
// {"ok": bool, "checks": [{"name", "state", "ok", "message", "fix"}, ...]}
// on one line; "ok" of a skipped check is false.
std::string JsonReport(const std::vector<Check>& checks);
// 0 when no check found a problem (skipped ones do not fail), else 1.
int ExitCode(const std::vector<Check>& checks);

}  // namespace clairfs::doctor
