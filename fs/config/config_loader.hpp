// The one loader of the daemon's configuration and the only yaml-cpp user.
//
// Precedence: Config defaults < the YAML file given by --config < the other
// command-line options. Every unknown key, bad value, malformed option and
// missing required setting is collected, and the returned Status lists them
// all, one per line, so a user fixes a config in one round. Thread-compatible.
#pragma once

#include <string>
#include <vector>

#include "base/status.hpp"
#include "fs/config/config.hpp"

namespace clairfs::fs {

struct CommandLine {
  Config config;
  bool help = false;        // -h/--help was given: print usage, mount nothing
  std::string config_file;  // --config, if any
};

// `args` excludes argv[0]. Options, parsed by CLI11 (base/cli.hpp): --key
// value or --key=value for every key of Config (dashes and underscores are
// the same), --config FILE, -h/--help. A malformed command line (a key's
// value missing) is reported alone; every other problem together.
Result<CommandLine> LoadCommandLine(const std::vector<std::string>& args);

// Applies the top-level mapping of a YAML document onto `config`, appending
// one message per problem to `errors`; `source` names the document in them.
void ApplyYaml(const std::string& text, const std::string& source, Config* config,
               std::vector<std::string>* errors);

// The usage text for --help.
std::string Usage();

}  // namespace clairfs::fs
