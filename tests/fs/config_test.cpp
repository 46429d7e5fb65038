// Config table and loader: sizes, precedence, and every error reported at once.
#include "fs/config/config.hpp"

#include <catch2/catch.hpp>
#include <fstream>

#include "base/size.hpp"
#include "fs/config/config_loader.hpp"
#include "tests/support/format_fixture.hpp"

namespace clairfs::fs {
namespace {

using format::testing::TempDir;

std::string WriteFile(const TempDir& dir, const std::string& name, const std::string& text) {
  std::string path = dir.path() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST_CASE("ParseSize accepts suffixes and rejects junk", "[config]") {
  uint64_t v = 0;
  CHECK((ParseSize("512M", &v) && v == 512ull << 20));
  CHECK((ParseSize("4G", &v) && v == 4ull << 30));
  CHECK((ParseSize("64KiB", &v) && v == 64ull << 10));
  CHECK((ParseSize("1000", &v) && v == 1000));
  CHECK((ParseSize("2TB", &v) && v == 2ull << 40));
  CHECK_FALSE(ParseSize("", &v));
  CHECK_FALSE(ParseSize("-1G", &v));
  CHECK_FALSE(ParseSize("12X", &v));
  CHECK_FALSE(ParseSize("G", &v));
  CHECK_FALSE(ParseSize("99999999999999T", &v));
}

TEST_CASE("the effective config reads back to the same config", "[config]") {
  Config c;
  c.cluster.dataset = "/data/out";
  c.fuse.mount = "/mnt/x y";
  c.ram_cache = 3ull << 30;
  c.fuse.threads = 4;
  c.vfs.decline_open = false;
  c.log_level = LogLevel::kDebug;
  Config back;
  std::vector<std::string> errors;
  ApplyYaml(DescribeConfig(c), "described", &back, &errors);
  REQUIRE(errors.empty());
  CHECK(DescribeConfig(back) == DescribeConfig(c));
}

// config_fuzz (tests/fuzz/regressions/config/quoted-line-breaks): a quoted
// value with line breaks was described with them raw, and YAML folds raw line
// breaks inside quotes into spaces, so the description read back differently.
TEST_CASE("fuzz regression: values with line breaks and tabs read back exactly", "[config]") {
  Config c;
  std::vector<std::string> errors;
  ApplyYaml(
      "dataset: \"/scrat\n\n\n  cad: 0\"\nmount: \"/m\\tx\\ry\\x7f\"\n"
      "prefetch_sampler: keras\nprefetch_seed: \"4\\n2\"\n",
      "fuzzed", &c, &errors);
  REQUIRE(errors.empty());
  CHECK(c.cluster.dataset == "/scrat\n\ncad: 0");
  CHECK(c.fuse.mount == "/m\tx\ry\x7f");
  Config back;
  ApplyYaml(DescribeConfig(c), "described", &back, &errors);
  REQUIRE(errors.empty());
  CHECK(back.cluster.dataset == c.cluster.dataset);
  CHECK(back.fuse.mount == c.fuse.mount);
  CHECK(back.prefetch_settings == c.prefetch_settings);
}

TEST_CASE("bytes that are not UTF-8 read back exactly", "[config]") {
  Config c;
  c.cluster.dataset = "/d\xff\xfe/x\xc3";
  c.fuse.mount = std::string("/m\0n", 4) + "\xe2\x82";
  c.prefetch_settings.emplace_back("seed", "\x80\"\\");
  Config back;
  std::vector<std::string> errors;
  ApplyYaml(DescribeConfig(c), "described", &back, &errors);
  REQUIRE(errors.empty());
  CHECK(back.cluster.dataset == c.cluster.dataset);
  CHECK(back.fuse.mount == c.fuse.mount);
  CHECK(back.prefetch_settings == c.prefetch_settings);
}

TEST_CASE("the help prints each default from a default Config", "[config]") {
  const std::string help = ConfigHelp();
  CHECK(help.find("--ram-cache") != std::string::npos);
  CHECK(help.find("[1G]") != std::string::npos);    // ram_cache
  CHECK(help.find("[1M]") != std::string::npos);    // read_ahead
  CHECK(help.find("[2000]") != std::string::npos);  // peer_timeout_ms
  CHECK(help.find("[true]") != std::string::npos);  // no_open
  CHECK(help.find("(required)") != std::string::npos);
}

TEST_CASE("a sampler's and a sampler setting's names are plain names", "[config]") {
  Config c;
  CHECK(SetConfigValue(&c, "prefetch_keras_version", "3.15").ok());
  CHECK(SetConfigValue(&c, "prefetch_sampler", "tf-list-files").ok());
  CHECK_FALSE(SetConfigValue(&c, "prefetch_sampler", "a: #b").ok());
  CHECK_FALSE(SetConfigValue(&c, "prefetch_sampler", "").ok());
  for (const char* key : {"prefetch_a b", "prefetch_x: y", "prefetch_#", "prefetch_n\nm"}) {
    INFO(key);
    const Status st = SetConfigValue(&c, key, "1");
    CHECK_FALSE(st.ok());
    CHECK(st.message().find("unknown key") != std::string::npos);
  }
  CHECK(c.prefetch_settings.size() == 1);
}

TEST_CASE("yaml file then command line, command line wins", "[config]") {
  TempDir dir;
  std::string yaml =
      WriteFile(dir, "c.yaml", "dataset: /d\nmount: /m\nram_cache: 512M\nthreads: 3\n");
  auto cl = LoadCommandLine({"--config", yaml, "--threads=7", "--log-level", "warn"});
  REQUIRE(cl.ok());
  CHECK(cl->config.cluster.dataset == "/d");
  CHECK(cl->config.ram_cache == 512ull << 20);
  CHECK(cl->config.fuse.threads == 7);
  CHECK(cl->config.log_level == LogLevel::kWarn);
}

TEST_CASE("every config error is reported at once", "[config]") {
  TempDir dir;
  std::string yaml = WriteFile(dir, "bad.yaml",
                               "ram_cach: 1G\n"       // unknown key (typo)
                               "threads: many\n"      // bad value
                               "ram_cache: 12X\n"     // bad size
                               "clone_fd: [1, 2]\n"   // not a scalar
                               "log_level: loud\n");  // bad enum
  auto cl = LoadCommandLine({"--config", yaml, "--bogus", "1", "stray"});
  REQUIRE_FALSE(cl.ok());
  const std::string& m = cl.status().message();
  CHECK(cl.status().err() == EINVAL);
  for (const char* want :
       {"ram_cach: unknown key", "threads: bad value", "ram_cache: bad value",
        "clone_fd: needs a single value", "log_level: bad value", "--bogus: unknown key",
        "unexpected argument 'stray'", "dataset: required", "mount: required"}) {
    INFO(want);
    CHECK(m.find(want) != std::string::npos);
  }
  CHECK(m.find("bad.yaml:1:") != std::string::npos);  // errors carry the line
}

TEST_CASE("unknown key is rejected even when everything else is fine", "[config]") {
  auto cl = LoadCommandLine({"--dataset", "/d", "--mount", "/m", "--ramcache", "1G"});
  REQUIRE_FALSE(cl.ok());
  CHECK(cl.status().message() == "--ramcache: unknown key");
}

TEST_CASE("missing config file and invalid yaml are errors", "[config]") {
  TempDir dir;
  auto missing =
      LoadCommandLine({"--config", dir.path() + "/nope.yaml", "--dataset", "/d", "--mount", "/m"});
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().message().find("nope.yaml") != std::string::npos);
  std::string bad = WriteFile(dir, "b.yaml", "dataset: [unclosed\n");
  auto invalid = LoadCommandLine({"--config", bad, "--mount", "/m"});
  REQUIRE_FALSE(invalid.ok());
  CHECK(invalid.status().message().find("not valid YAML") != std::string::npos);
  std::string list = WriteFile(dir, "l.yaml", "- a\n- b\n");
  auto notmap = LoadCommandLine({"--config", list, "--dataset", "/d", "--mount", "/m"});
  REQUIRE_FALSE(notmap.ok());
  CHECK(notmap.status().message().find("mapping") != std::string::npos);
}

TEST_CASE("a key set twice in the yaml is an error naming both lines", "[config]") {
  TempDir dir;
  std::string twice = WriteFile(dir, "t.yaml", "dataset: /d\nram_cache: 1G\nram-cache: 2G\n");
  auto cl = LoadCommandLine({"--config", twice, "--mount", "/m"});
  REQUIRE_FALSE(cl.ok());
  CHECK(cl.status().message().find(":3: ram-cache: set twice (first on line 2)") !=
        std::string::npos);
}

TEST_CASE("help needs no other option", "[config]") {
  auto cl = LoadCommandLine({"--help"});
  REQUIRE(cl.ok());
  CHECK(cl->help);
  CHECK(Usage().find("--ram-cache") != std::string::npos);
}

}  // namespace
}  // namespace clairfs::fs
