// clairfs-order's Keras flags (tools/order/keras_flags.cpp): what they set and
// how they fail.
#include <catch2/catch.hpp>

#include "prefetch/options/order_flags.hpp"

namespace pf = clairfs::prefetch;
using clairfs::prefetch::ParseFlags;

TEST_CASE("keras-flow flags fill KerasFlowOptions", "[keras_flow]") {
  auto f = ParseFlags({"--sampler",
                       "keras-flow",
                       "--root",
                       "/d",
                       "--seed",
                       "9",
                       "--batch-size",
                       "5",
                       "--keras-version",
                       "3.15.1",
                       "--augment",
                       "rotation_range=3",
                       "--validation-split",
                       "0.25",
                       "--subset",
                       "validation",
                       "--protocol",
                       "fit",
                       "--fit-shuffle",
                       "off",
                       "--classes",
                       "b,a",
                       "--follow-links"});
  REQUIRE(f.ok());
  const pf::KerasFlowOptions& o = f->spec.keras_flow;
  CHECK(f->spec.kind == pf::SamplerKind::kKerasFlow);
  CHECK(o.seed == 9u);
  CHECK(o.batch_size == 5);
  CHECK(o.version == pf::KerasVersion{3, 15, 1});
  CHECK(o.augment.rotation);
  CHECK(o.validation_split == 0.25);
  CHECK(o.subset == pf::KerasFlowOptions::Subset::kValidation);
  CHECK(o.protocol == pf::KerasFlowOptions::Protocol::kFit);
  CHECK_FALSE(o.fit_shuffle);
  CHECK(*o.classes == std::vector<std::string>{"b", "a"});
  CHECK(o.follow_links);
}

TEST_CASE("Keras flag errors name the flag and the fix", "[keras_flow]") {
  auto no_seed = ParseFlags({"--sampler", "keras-flow", "--root", "/d"});
  REQUIRE_FALSE(no_seed.ok());
  CHECK(no_seed.status().message().find("pass seed=S to flow_from_directory") != std::string::npos);
  CHECK(ParseFlags({"--sampler", "keras-flow", "--root", "/d", "--no-shuffle"}).ok());
  auto bad = ParseFlags({"--sampler", "keras-flow", "--root", "/d", "--seed", "1", "--protocol",
                         "loop", "--fit-shuffle", "maybe", "--augment", "zoom=2"});
  REQUIRE_FALSE(bad.ok());
  const std::string& m = bad.status().message();
  CHECK(m.find("--protocol: expected next or fit") != std::string::npos);
  CHECK(m.find("--fit-shuffle: expected on or off") != std::string::npos);
  CHECK(m.find("unknown ImageDataGenerator option 'zoom'") != std::string::npos);
  auto wrong_kind = ParseFlags({"--sampler", "keras", "--root", "/d", "--seed", "1", "--augment",
                                "rotation_range=1", "--classes", "a"});
  REQUIRE_FALSE(wrong_kind.ok());
  CHECK(wrong_kind.status().message().find("--augment does not apply to --sampler keras") !=
        std::string::npos);
  auto keras = ParseFlags({"--sampler", "keras", "--root", "/d", "--seed", "1", "--class-names",
                           "x,y", "--follow-links"});
  REQUIRE(keras.ok());
  CHECK(*keras->spec.keras.class_names == std::vector<std::string>{"x", "y"});
  CHECK(keras->spec.keras.follow_links);
  CHECK_FALSE(ParseFlags({"--sampler", "keras-flow", "--root", "/d", "--seed", "4294967296"}).ok());
}

TEST_CASE("keras-flow steps-per-epoch flag: model.fit's, at least 1", "[keras_flow]") {
  auto f = ParseFlags({"--sampler", "keras-flow", "--root", "/d", "--seed", "1", "--protocol",
                       "fit", "--steps-per-epoch", "7"});
  REQUIRE(f.ok());
  CHECK(f->spec.keras_flow.steps_per_epoch == 7);
  auto zero = ParseFlags({"--sampler", "keras-flow", "--root", "/d", "--seed", "1", "--protocol",
                          "fit", "--steps-per-epoch", "0"});
  REQUIRE_FALSE(zero.ok());
  CHECK(zero.status().message().find("--steps-per-epoch: '0' is not an integer >= 1") !=
        std::string::npos);
  auto next = ParseFlags(
      {"--sampler", "keras-flow", "--root", "/d", "--seed", "1", "--steps-per-epoch", "3"});
  REQUIRE_FALSE(next.ok());
  CHECK(next.status().message().find("--steps-per-epoch applies to --protocol fit only") !=
        std::string::npos);
  auto batches = ParseFlags({"--sampler", "keras", "--root", "/d", "--seed", "1", "--batches"});
  REQUIRE_FALSE(batches.ok());
  CHECK(batches.status().message().find("--batches applies to --sampler keras-flow") !=
        std::string::npos);
}
