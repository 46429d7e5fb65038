// The prefetch keys of the daemon's config: parsing, defaults, the checks
// that concern several keys, and that all errors come back together.
#include <catch2/catch.hpp>

#include "fs/core/config.hpp"
#include "fs/core/config_loader.hpp"

namespace clairfs::fs {
namespace {

TEST_CASE("prefetch keys parse from the command line and read back", "[prefetch_config]") {
  auto cl = LoadCommandLine({"--dataset", "d", "--mount", "m", "--prefetch-sampler",
                             "torch-distributed", "--prefetch-root", "train", "--prefetch-seed",
                             "5", "--prefetch-world-size", "8", "--prefetch-ranks-per-node", "4",
                             "--prefetch-budget", "2G", "--prefetch-torch-version", "2.7.1"});
  REQUIRE(cl.ok());
  const Config& c = cl->config;
  CHECK(c.prefetch_sampler == "torch-distributed");
  CHECK(c.prefetch_root == "train");
  CHECK(c.prefetch_seed == 5);
  CHECK(c.prefetch_world_size == 8);
  CHECK(c.prefetch_ranks_per_node == 4);
  CHECK(c.prefetch_budget == (uint64_t{2} << 30));
  CHECK(c.prefetch_torch_version == "2.7.1");
  CHECK(c.prefetch_epochs == 1);  // defaults
  CHECK(c.prefetch_factor == 2);
  CHECK(c.prefetch_threads == 2);
  const std::string text = DescribeConfig(c);
  CHECK(text.find("prefetch_sampler: torch-distributed\n") != std::string::npos);
  CHECK(text.find("prefetch_root: \"train\"\n") != std::string::npos);
}

TEST_CASE("the default is no prefetch and needs nothing else", "[prefetch_config]") {
  Config c;
  c.dataset = "d";
  c.mount = "m";
  CHECK(c.prefetch_sampler == "none");
  CHECK(ValidateConfig(c).empty());
}

TEST_CASE("bad prefetch values are rejected", "[prefetch_config]") {
  Config c;
  CHECK_FALSE(SetConfigValue(&c, "prefetch_sampler", "torch").ok());
  CHECK_FALSE(SetConfigValue(&c, "prefetch_epochs", "0").ok());
  CHECK_FALSE(SetConfigValue(&c, "prefetch_world_size", "-1").ok());
  CHECK_FALSE(SetConfigValue(&c, "prefetch_batch_size", "0").ok());
  CHECK_FALSE(SetConfigValue(&c, "prefetch_threads", "0").ok());
  CHECK_FALSE(SetConfigValue(&c, "prefetch_keras_version", "three").ok());
  CHECK_FALSE(SetConfigValue(&c, "prefetch_torch_version", "1.").ok());
  CHECK(SetConfigValue(&c, "prefetch_keras_version", "3.3").ok());
}

TEST_CASE("prefetch checks across keys are reported together", "[prefetch_config]") {
  Config c;
  c.dataset = "d";
  c.mount = "m";
  c.prefetch_sampler = "order-file";
  c.prefetch_root = "../up";
  c.prefetch_world_size = 2;
  c.prefetch_ranks_per_node = 4;
  const auto errors = ValidateConfig(c);
  REQUIRE(errors.size() == 3);
  CHECK(errors[0].find("prefetch_root") != std::string::npos);
  CHECK(errors[1].find("prefetch_order_file") != std::string::npos);
  CHECK(errors[2].find("prefetch_ranks_per_node") != std::string::npos);
  c.prefetch_sampler = "torch-random";
  c.prefetch_root = "train";
  c.prefetch_ranks_per_node = 0;
  const auto random = ValidateConfig(c);
  REQUIRE(random.size() == 1);
  CHECK(random[0].find("torch-random") != std::string::npos);
}

}  // namespace
}  // namespace clairfs::fs
