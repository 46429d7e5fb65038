#include "base/cli.hpp"

#include <charconv>
#include <cstdio>

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

}  // namespace clairfs::cli
