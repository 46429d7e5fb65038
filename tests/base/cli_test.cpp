// base/cli: the command-line front every binary shares - values in both
// spellings, repeated options, positionals anywhere, and usage errors that
// name the option.
#include "base/cli.hpp"

#include <catch2/catch.hpp>

namespace clairfs::cli {
namespace {

TEST_CASE("options, repeats, flags and positionals", "[cli]") {
  CLI::App app;
  uint64_t p = 0;
  std::vector<std::string> globs;
  std::string src, out;
  bool force = false, json = false;
  AddU64(app, "--partitions", &p);
  app.add_option("--broadcast", globs)->allow_extra_args(false);
  app.add_flag("--force", force);
  app.add_flag("--json", json);
  app.add_option("SRC", src)->required();
  app.add_option("OUT", out)->required();
  bool help = true;
  REQUIRE(Parse(app,
                {"src", "--partitions", "8", "--broadcast=a", "out", "--broadcast", "b", "--force"},
                &help)
              .ok());
  CHECK_FALSE(help);
  CHECK(p == 8);
  CHECK(globs == std::vector<std::string>{"a", "b"});
  CHECK(force);
  CHECK_FALSE(json);
  CHECK(src == "src");
  CHECK(out == "out");
}

TEST_CASE("usage errors name the option; --help is not an error", "[cli]") {
  CLI::App app;
  uint64_t t = 0;
  std::string x;
  AddU64(app, "--threads", &t);
  app.add_option("X", x);
  bool help = false;
  const Status negative = Parse(app, {"--threads", "-1"}, &help);
  REQUIRE_FALSE(negative.ok());
  CHECK(negative.message() == "--threads wants a non-negative integer, got '-1'");
  app.clear();
  CHECK_FALSE(Parse(app, {"--threads", "0x10"}, &help).ok());  // decimal only
  app.clear();
  const Status unknown = Parse(app, {"--bogus", "x"}, &help);
  REQUIRE_FALSE(unknown.ok());
  CHECK_THAT(unknown.message(), Catch::Contains("--bogus"));
  app.clear();
  const Status missing = Parse(app, {"--threads"}, &help);
  REQUIRE_FALSE(missing.ok());
  CHECK_THAT(missing.message(), Catch::Contains("--threads"));
  app.clear();
  REQUIRE(Parse(app, {"--threads", "3", "--help"}, &help).ok());
  CHECK(help);
}

}  // namespace
}  // namespace clairfs::cli
