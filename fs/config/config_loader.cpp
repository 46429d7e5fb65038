#include "fs/config/config_loader.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <map>

#include "base/cli.hpp"
#include "partitioner/format/file_io.hpp"

namespace clairfs::fs {
namespace {

std::string Normalize(std::string key) {
  for (char& c : key) {
    if (c == '-') c = '_';
  }
  return key;
}

std::string Dashed(std::string key) {
  for (char& c : key) {
    if (c == '_') c = '-';
  }
  return key;
}

std::string Join(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) {
    if (!out.empty()) out += '\n';
    out += l;
  }
  return out;
}

// The arguments CLI11 left over: keys outside the table ("--prefetch-seed 5",
// "--bogus=1"), as (key, value) in the order given; a stray word or a key
// without a value is an error.
std::vector<std::pair<std::string, std::string>> LeftoverKeys(const std::vector<std::string>& rest,
                                                              std::vector<std::string>* errors) {
  std::vector<std::pair<std::string, std::string>> keys;
  for (size_t i = 0; i < rest.size(); ++i) {
    const std::string& a = rest[i];
    if (a.rfind("--", 0) != 0 || a.size() == 2) {
      errors->push_back("unexpected argument '" + a + "' (options are --key value)");
      continue;
    }
    std::string key = a.substr(2), value;
    if (size_t eq = key.find('='); eq != std::string::npos) {
      value = key.substr(eq + 1);
      key.resize(eq);
    } else if (i + 1 < rest.size() && rest[i + 1].rfind("--", 0) != 0) {
      value = rest[++i];
    } else {
      errors->push_back("--" + key + ": needs a value");
      continue;
    }
    keys.emplace_back(Normalize(key), value);
  }
  return keys;
}

}  // namespace

void ApplyYaml(const std::string& text, const std::string& source, Config* config,
               std::vector<std::string>* errors) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    errors->push_back(source + ": not valid YAML: " + e.what());
    return;
  }
  if (root.IsNull()) return;  // an empty file sets nothing
  if (!root.IsMap()) {
    errors->push_back(source + ": the top level must be a mapping of key: value");
    return;
  }
  std::map<std::string, int> seen;  // normalized key -> line it was first set on
  for (const auto& kv : root) {
    std::string key;
    try {
      key = kv.first.as<std::string>();
    } catch (const YAML::Exception&) {
      errors->push_back(source + ": a key is not a plain string");
      continue;
    }
    const int line = kv.first.Mark().line + 1;
    const std::string where = source + ":" + std::to_string(line) + ": ";
    if (!kv.second.IsScalar()) {
      errors->push_back(where + key + ": needs a single value");
      continue;
    }
    // yaml-cpp keeps both entries of a repeated key; which one wins would be an
    // accident of the parser, so a repeat is an error.
    if (auto [it, first] = seen.emplace(Normalize(key), line); !first) {
      errors->push_back(where + key + ": set twice (first on line " + std::to_string(it->second) +
                        ")");
      continue;
    }
    Status st = SetConfigValue(config, Normalize(key), kv.second.Scalar());
    if (!st.ok()) errors->push_back(where + st.message());
  }
}

Result<CommandLine> LoadCommandLine(const std::vector<std::string>& args) {
  CommandLine cl;
  CLI::App app("clairfsd", "clairfsd");
  // Every key of the table is an option; the other prefetch_<name> keys (the
  // sampler's own settings, an open set checked with prefetch_sampler) and
  // unknown keys are left over and go through SetConfigValue like YAML keys,
  // so that every problem is reported together.
  app.allow_extras();
  std::vector<std::pair<std::string, CLI::Option*>> keys;
  for (const std::string& key : ConfigKeys()) {
    keys.emplace_back(key, cli::AddValue(app, "--" + Dashed(key)));
  }
  CLI::Option* config = cli::AddValue(app, "--config");
  // Dashes and underscores are the same in an option's name.
  std::vector<std::string> dashed = args;
  for (std::string& a : dashed) {
    if (a.rfind("--", 0) != 0) continue;
    const size_t eq = std::min(a.find('='), a.size());
    a = "--" + Dashed(a.substr(2, eq - 2)) + a.substr(eq);
  }
  Status parsed = cli::Parse(app, dashed, &cl.help);
  if (!parsed.ok()) return parsed;
  if (cl.help) return cl;

  std::vector<std::string> errors;
  // A key given twice: the last value wins, as in the order of a command line.
  auto value = [&](const std::string& key, const CLI::Option& option, std::string* out) {
    if (cli::HasValue(option)) {
      *out = cli::Value(option);
      return true;
    }
    errors.push_back("--" + key + ": needs a value");
    return false;
  };
  if (*config) value("config", *config, &cl.config_file);
  const std::vector<std::pair<std::string, std::string>> others =
      LeftoverKeys(app.remaining(), &errors);  // applied after the YAML file
  if (!cl.config_file.empty()) {
    std::vector<char> bytes;
    Status st = format::ReadWholeFile(cl.config_file, &bytes);
    if (st.ok()) {
      ApplyYaml(std::string(bytes.begin(), bytes.end()), cl.config_file, &cl.config, &errors);
    } else {
      errors.push_back("config: " + st.message());
    }
  }
  for (const auto& [key, option] : keys) {
    std::string v;
    if (option->count() == 0 || !value(key, *option, &v)) continue;
    Status st = SetConfigValue(&cl.config, key, v);
    if (!st.ok()) errors.push_back("--" + st.message());
  }
  for (const auto& [key, text] : others) {
    Status st = SetConfigValue(&cl.config, key, text);
    if (!st.ok()) errors.push_back("--" + st.message());
  }
  for (std::string& e : ValidateConfig(cl.config)) errors.push_back(std::move(e));
  if (!errors.empty()) return Status::InvalidArgument(Join(errors));
  return cl;
}

std::string Usage() {
  return "usage: clairfsd --dataset DIR --mount DIR [--config FILE.yaml] [options]\n"
         "Serves a clairfs-partition output read-only at the mount point, in the\n"
         "foreground, until SIGINT/SIGTERM or `fusermount3 -u DIR`.\n"
         "Every option is also a key of the YAML config (command line wins):\n" +
         ConfigHelp() +
         "Exit status: 0 after a clean unmount, 1 on a runtime error (a bad manifest,\n"
         "another rank could not start), 2 on bad usage or configuration (including a\n"
         "dataset or mount point that cannot be used).\n";
}

}  // namespace clairfs::fs
