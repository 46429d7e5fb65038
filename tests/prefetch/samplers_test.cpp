// DistributedSampler, RandomSampler and SequentialSampler against vectors from
// the real torch 1.13 (tests/prefetch/make_vectors.py).
#include <catch2/catch.hpp>

#include "prefetch/order/sequential_sampler.hpp"
#include "prefetch/torch/distributed_sampler.hpp"
#include "prefetch/torch/random_sampler.hpp"
#include "tests/prefetch/vectors.hpp"

namespace pf = clairfs::prefetch;

TEST_CASE("DistributedSampler matches torch for every rank", "[unit][prefetch]") {
  int padded_cyclic = 0, dropped = 0, seeds_above_32_bits = 0;
  for (const auto& v : pf::testing::kDistributedVectors) {
    INFO("n " << v.n << " R " << v.replicas << " seed " << v.seed << " epoch " << v.epoch
              << " drop_last " << v.drop_last << " shuffle " << v.shuffle);
    pf::DistributedSamplerOptions o;
    o.num_replicas = v.replicas;
    o.seed = v.seed;
    o.drop_last = v.drop_last;
    o.shuffle = v.shuffle;
    auto s = pf::DistributedSampler::Create(v.n, o);
    REQUIRE(s.ok());
    REQUIRE(s->world_size() == v.replicas);
    auto all = s->OrderAllRanks(v.epoch);
    std::vector<uint64_t> ranks;
    for (uint64_t r = v.replicas; r-- > 0;) ranks.push_back(r);  // any order
    auto some = s->OrderRanks(ranks, v.epoch);
    REQUIRE(some.ok());
    for (size_t i = 0; i < ranks.size(); ++i) REQUIRE(some.value()[i] == v.ranks[ranks[i]]);
    for (uint64_t r = 0; r < v.replicas; ++r) {
      auto order = s->Order(r, v.epoch);
      REQUIRE(order.ok());
      REQUIRE(order.value() == v.ranks[r]);
      REQUIRE(all[r] == v.ranks[r]);
      REQUIRE(s->num_samples() == v.ranks[r].size());
    }
    if (!v.drop_last && v.replicas > 2 * v.n) ++padded_cyclic;
    if (v.drop_last && v.n % v.replicas != 0) ++dropped;
    if (v.seed > 0xffffffffull) ++seeds_above_32_bits;
  }
  // The vectors must keep covering these cases.
  CHECK(padded_cyclic > 0);
  CHECK(dropped > 0);
  CHECK(seeds_above_32_bits > 0);
}

TEST_CASE("DistributedSampler without set_epoch repeats epoch 0", "[unit][prefetch]") {
  pf::DistributedSamplerOptions o;
  o.num_replicas = 3;
  o.seed = 8;
  auto with = pf::DistributedSampler::Create(20, o);
  o.set_epoch_called = false;
  auto without = pf::DistributedSampler::Create(20, o);
  REQUIRE(without->Order(1, 4).value() == with->Order(1, 0).value());
  REQUIRE(without->Order(1, 4).value() != with->Order(1, 4).value());
}

TEST_CASE("DistributedSampler rejects bad arguments", "[unit][prefetch]") {
  pf::DistributedSamplerOptions o;
  o.num_replicas = 0;
  CHECK_FALSE(pf::DistributedSampler::Create(10, o).ok());
  o.num_replicas = 2;
  auto s = pf::DistributedSampler::Create(10, o);
  CHECK_FALSE(s->OrderRanks({0, 2}, 0).ok());
  pf::SequentialSampler seq(3);
  const pf::Sampler& base = seq;  // the interface's default OrderRanks
  CHECK(base.OrderRanks({0, 0}, 1).value().size() == 2);
  CHECK_FALSE(base.OrderRanks({1}, 1).ok());
  auto bad = s->Order(2, 0);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == clairfs::Code::kInvalidArgument);
}

TEST_CASE("RandomSampler matches torch over several epochs", "[unit][prefetch]") {
  bool saw_loader = false, saw_persistent = false, saw_num_samples = false;
  for (const auto& v : pf::testing::kRandomSamplerVectors) {
    INFO("n " << v.n << " seed " << v.seed << " num_samples " << v.num_samples << " loader "
              << v.loader_mode);
    pf::RandomSamplerOptions o;
    o.generator_seed = v.seed;
    if (v.num_samples != 0) o.num_samples = v.num_samples;
    o.loader_draw = v.loader_mode == 0   ? pf::LoaderSeedDraw::kNone
                    : v.loader_mode == 1 ? pf::LoaderSeedDraw::kEveryEpoch
                                         : pf::LoaderSeedDraw::kFirstEpoch;
    auto s = pf::TorchRandomSampler::Create(v.n, o);
    REQUIRE(s.ok());
    for (uint64_t e = 0; e < v.epochs.size(); ++e) {
      INFO("epoch " << e);
      REQUIRE(s->Order(0, e).value() == v.epochs[e]);
    }
    saw_loader |= v.loader_mode == 1;
    saw_persistent |= v.loader_mode == 2;
    saw_num_samples |= v.num_samples != 0;
  }
  CHECK(saw_loader);
  CHECK(saw_persistent);
  CHECK(saw_num_samples);
}

TEST_CASE("RandomSampler epoch 1 is not the second of two consecutive randperms",
          "[unit][prefetch]") {
  // The discarded permutation: epoch 1 is the third randperm drawn from the seed.
  pf::RandomSamplerOptions o;
  o.generator_seed = 21;
  auto s = pf::TorchRandomSampler::Create(12, o);
  pf::TorchGenerator g(21);
  pf::TorchVersion v{};
  auto first = pf::RandPerm(12, g, v);
  auto second = pf::RandPerm(12, g, v);
  auto third = pf::RandPerm(12, g, v);
  CHECK(s->Order(0, 0).value() == first);
  CHECK(s->Order(0, 1).value() == third);
  CHECK(s->Order(0, 1).value() != second);
}

TEST_CASE("RandomSampler and SequentialSampler have one consumer", "[unit][prefetch]") {
  CHECK_FALSE(pf::TorchRandomSampler::Create(0, {}).ok());
  auto s = pf::TorchRandomSampler::Create(4, {});
  CHECK_FALSE(s->Order(1, 0).ok());
  pf::SequentialSampler seq(3);
  CHECK(seq.Order(0, 7).value() == std::vector<pf::Index>{0, 1, 2});
  CHECK_FALSE(seq.Order(1, 0).ok());
}
