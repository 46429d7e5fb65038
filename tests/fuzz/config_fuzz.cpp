// Fuzz target: the YAML config loader (fs/config/config_loader.hpp, ApplyYaml).
//
// Input: the text of a config file, applied over a Config whose required
// paths are set (as the command line may set them). Invariant: a config that
// loads without errors is described (DescribeConfig, what the daemon logs as its effective
// config) as YAML that loads without errors into a default Config and is
// described identically - the description is a faithful, re-readable copy.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "fs/config/config_loader.hpp"

namespace {

using namespace clairfs::fs;

void Require(bool ok, const char* what, const std::string& detail) {
  if (ok) return;
  std::fprintf(stderr, "config_fuzz: invariant violated: %s\n%s\n", what, detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  Config config;
  config.cluster.dataset = "/scratch/dataset";
  config.fuse.mount = "/tmp/mnt";
  std::vector<std::string> errors;
  ApplyYaml(text, "fuzz.yaml", &config, &errors);
  if (!errors.empty()) return 0;
  const std::string described = DescribeConfig(config);
  Config again;
  ApplyYaml(described, "described.yaml", &again, &errors);
  Require(errors.empty(), "the described config does not load",
          described + (errors.empty() ? "" : errors.front()));
  Require(DescribeConfig(again) == described, "the described config loads as another config",
          described + "---\n" + DescribeConfig(again));
  return 0;
}
