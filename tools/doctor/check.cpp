#include "tools/doctor/check.hpp"

#include "base/json.hpp"

namespace clairfs::doctor {
namespace {

const char* StateName(Check::State s) {
  switch (s) {
    case Check::State::kOk:
      return "ok";
    case Check::State::kProblem:
      return "problem";
    case Check::State::kSkipped:
      return "skipped";
  }
  return "?";
}

}  // namespace

std::string TextReport(const std::vector<Check>& checks) {
  std::string out;
  for (const Check& c : checks) {
    std::string label = c.problem() ? "PROBLEM" : StateName(c.state);
    label.resize(8, ' ');
    out += label + c.name + ": " + c.message + "\n";
    if (c.problem() && !c.fix.empty()) out += "        fix: " + c.fix + "\n";
  }
  return out;
}

std::string JsonReport(const std::vector<Check>& checks) {
  JsonWriter w;
  w.BeginObject().Bool("ok", ExitCode(checks) == 0).BeginArray("checks");
  for (const Check& c : checks) {
    w.BeginObject()
        .String("name", c.name)
        .String("state", StateName(c.state))
        .Bool("ok", c.state == Check::State::kOk)
        .String("message", c.message)
        .String("fix", c.fix)
        .EndObject();
  }
  w.EndArray().EndObject();
  return w.str() + "\n";
}

int ExitCode(const std::vector<Check>& checks) {
  for (const Check& c : checks) {
    if (c.problem()) return 1;
  }
  return 0;
}

}  // namespace clairfs::doctor
