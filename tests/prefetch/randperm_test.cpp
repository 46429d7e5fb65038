// torch.randperm against vectors from the real torch 1.13, and the torch >= 2.7
// algorithm for huge n against its definition on small n (no such torch here).
#include <algorithm>
#include <catch2/catch.hpp>
#include <random>

#include "prefetch/rng/torch_random.hpp"
#include "tests/prefetch/vectors.hpp"

namespace pf = clairfs::prefetch;

namespace {
const pf::TorchVersion kTorch113{1, 13};
const pf::TorchVersion kTorch27{2, 7};
}  // namespace

TEST_CASE("randperm matches torch 1.13, three calls per generator", "[unit][prefetch]") {
  for (const auto& v : pf::testing::kRandPermVectors) {
    INFO("seed " << v.seed << " n " << v.n);
    pf::TorchGenerator g(v.seed);
    for (const auto& expected : v.perms) REQUIRE(pf::RandPerm(v.n, g, kTorch113) == expected);
  }
}

TEST_CASE("randperm matches torch 1.13 for larger n", "[unit][prefetch]") {
  for (const auto& d : pf::testing::kRandPermDigests) {
    INFO("seed " << d.seed << " n " << d.n);
    pf::TorchGenerator g(d.seed);
    std::vector<pf::Index> p = pf::RandPerm(d.n, g, kTorch113);
    REQUIRE(std::vector<pf::Index>(p.begin(), p.begin() + 16) == d.head);
    REQUIRE(std::vector<pf::Index>(p.end() - 16, p.end()) == d.tail);
    uint64_t sum = 0;
    for (uint64_t i = 0; i < p.size(); ++i) sum += (i + 1) * (p[i] + 1);
    REQUIRE(sum == d.checksum);
  }
}

TEST_CASE("torch 2.7 agrees with 1.13 below the size threshold", "[unit][prefetch]") {
  for (uint64_t n : {0ull, 1ull, 10ull, 1000ull}) {
    pf::TorchGenerator a(11), b(11);
    REQUIRE(pf::RandPerm(n, a, kTorch27) == pf::RandPerm(n, b, kTorch113));
  }
}

TEST_CASE("the inside-out algorithm is chosen from 214748364 on, from torch 2.7",
          "[unit][prefetch]") {
  CHECK_FALSE(pf::RandPermUsesInsideOut(214748363, kTorch27));
  CHECK(pf::RandPermUsesInsideOut(214748364, kTorch27));
  CHECK(pf::RandPermUsesInsideOut(214748364, pf::TorchVersion{3, 0}));
  CHECK_FALSE(pf::RandPermUsesInsideOut(214748364, pf::TorchVersion{2, 6}));
  CHECK_FALSE(pf::RandPermUsesInsideOut(4000000000ull, kTorch113));
  CHECK(pf::RandPermDraws(214748364, kTorch27) == 2 * 214748364ull);
  CHECK(pf::RandPermDraws(214748364, kTorch113) == 214748363ull);
  CHECK(pf::RandPermDraws(0, kTorch113) == 0);
}

// Installed torch (1.13) never runs the newer algorithm, so this checks the
// implementation against the algorithm's definition on small n: for i = 0..n-1,
// z = random64() % (i + 1); a[i] = a[z]; a[z] = i, with std::mt19937 as engine.
TEST_CASE("inside-out randperm follows its definition on small n", "[unit][prefetch]") {
  for (uint32_t seed : {0u, 3u, 99u}) {
    for (uint64_t n : {1ull, 2ull, 7ull, 50ull}) {
      std::mt19937 oracle(seed);
      std::vector<uint64_t> a(n, 0);
      for (uint64_t i = 0; i < n; ++i) {
        uint64_t hi = oracle();
        uint64_t r = (hi << 32) | oracle();
        uint64_t z = r % (i + 1);
        a[i] = a[z];
        a[z] = i;
      }
      pf::TorchGenerator g(seed);
      std::vector<pf::Index> got = pf::RandPermInsideOut(n, g);
      REQUIRE(got == a);
      std::vector<pf::Index> sorted = got;
      std::sort(sorted.begin(), sorted.end());
      for (uint64_t i = 0; i < n; ++i) REQUIRE(sorted[i] == i);
      // Exactly 2n draws consumed.
      pf::TorchGenerator h(seed);
      h.Discard(2 * n);
      REQUIRE(g.Random() == h.Random());
    }
  }
}

TEST_CASE("TorchVersion parses release strings", "[unit][prefetch]") {
  CHECK(pf::TorchVersion::Parse("1.13").value() == kTorch113);
  CHECK(pf::TorchVersion::Parse("1.13.0a0").value() == kTorch113);
  CHECK(pf::TorchVersion::Parse("2.7.0+cu121").value() == kTorch27);
  CHECK(pf::TorchVersion::Parse("2.10").value() > kTorch27);
  CHECK_FALSE(pf::TorchVersion::Parse("2").ok());
  CHECK_FALSE(pf::TorchVersion::Parse("x.y").ok());
  CHECK_FALSE(pf::TorchVersion::Parse("2.7x").ok());
}
