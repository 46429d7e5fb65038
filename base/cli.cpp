#include "base/cli.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>

#include "base/version.hpp"

namespace clairfs::cli {

int UsageError(std::string_view prog, std::string_view message) {
  std::string out;
  size_t pos = 0;
  do {
    size_t nl = message.find('\n', pos);
    if (nl == std::string_view::npos) nl = message.size();
    out.append(prog).append(": ").append(message.substr(pos, nl - pos)).append("\n");
    pos = nl + 1;
  } while (pos < message.size());
  out.append("Try '").append(prog).append(" --help'.\n");
  std::fputs(out.c_str(), stderr);
  return kUsageExit;
}

Status Parse(CLI::App& app, std::vector<std::string> args, bool* help) {
  *help = false;
  // Listed in --help by CLI11; answered here, before CLI11 reads the line, so
  // that it wins over any problem in the rest of it.
  if (app.get_option_no_throw("--version") == nullptr) {  // an app parsed again
    app.add_flag("--version")->description("print the version and the build's options, then exit");
  }
  if (std::find(args.begin(), args.end(), "--version") != args.end()) {
    const std::string text = VersionText(app.get_name());
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    std::exit(0);
  }
  // CLI11 takes the arguments last first.
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    *help = true;
  } catch (const CLI::CallForAllHelp&) {
    *help = true;
  } catch (const CLI::ParseError& e) {
    return Status::InvalidArgument(e.what());
  }
  return Status::Ok();
}

std::optional<int> ParseMain(CLI::App& app, int argc, char** argv, std::string_view prog,
                             std::string_view help) {
  bool want_help = false;
  const Status st = Parse(app, std::vector<std::string>(argv + 1, argv + argc), &want_help);
  if (!st.ok()) return UsageError(prog, st.message());
  if (want_help) {
    std::fwrite(help.data(), 1, help.size(), stdout);
    return 0;
  }
  return std::nullopt;
}

CLI::Option* AddU64(CLI::App& app, const std::string& name, uint64_t* out) {
  return app.add_option_function<std::string>(name, [name, out](const std::string& text) {
    uint64_t v = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
      throw CLI::ValidationError(name + " wants a non-negative integer, got '" + text + "'");
    }
    *out = v;
  });
}

namespace {
// What CLI11 records for an AddValue option given without a value; no
// command line can hold it.
const std::string kNoValue("\x01(no value)");
}  // namespace

CLI::Option* AddValue(CLI::App& app, const std::string& name) {
  return app.add_option(name)->expected(0, 1)->default_str(kNoValue)->multi_option_policy(
      CLI::MultiOptionPolicy::TakeAll);
}

bool HasValue(const CLI::Option& option) {
  const std::vector<std::string>& results = option.results();
  return !results.empty() && results.back() != kNoValue;
}

std::string Value(const CLI::Option& option) {
  const std::vector<std::string>& results = option.results();
  return results.empty() || results.back() == kNoValue ? "" : results.back();
}

std::vector<std::string> ValueProblems(const CLI::App& app) {
  std::vector<std::string> problems;
  for (const CLI::Option* option : app.get_options()) {
    if (option->get_default_str() != kNoValue || option->count() == 0) continue;
    const std::vector<std::string>& results = option->results();
    const std::string name = option->get_name();
    for (const std::string& r : results) {
      if (r == kNoValue) {
        problems.push_back(name + " needs a value");
        break;
      }
    }
    if (results.size() > 1) problems.push_back(name + " given twice");
  }
  return problems;
}

}  // namespace clairfs::cli
