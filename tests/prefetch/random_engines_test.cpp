// MT19937, the torch generator and NumPy's RandomState against their oracles:
// std::mt19937 for the engine, vectors from the real numpy for the rest.
#include <catch2/catch.hpp>
#include <random>

#include "prefetch/rng/mt19937.hpp"
#include "prefetch/rng/numpy_random.hpp"
#include "prefetch/rng/torch_random.hpp"
#include "tests/prefetch/vectors.hpp"

namespace pf = clairfs::prefetch;

TEST_CASE("Mt19937 equals std::mt19937", "[unit][prefetch]") {
  for (uint32_t seed : {0u, 1u, 5489u, 42u, 0xffffffffu, 123456789u}) {
    pf::Mt19937 mine(seed);
    std::mt19937 oracle(seed);
    for (int i = 0; i < 2000; ++i) REQUIRE(mine.Next() == oracle());
  }
}

TEST_CASE("Mt19937 default seed gives the published 10000th output", "[unit][prefetch]") {
  pf::Mt19937 mt;
  mt.Discard(9999);
  CHECK(mt.Next() == 4123659995u);  // the C++ standard's check value
}

TEST_CASE("Mt19937 Discard equals drawing", "[unit][prefetch]") {
  for (uint64_t skip : {0ull, 1ull, 623ull, 624ull, 625ull, 1500ull, 10000ull}) {
    pf::Mt19937 a(77), b(77);
    for (uint64_t i = 0; i < skip; ++i) a.Next();
    b.Discard(skip);
    REQUIRE(a.Next() == b.Next());
  }
}

TEST_CASE("TorchGenerator seeds with the low 32 bits", "[unit][prefetch]") {
  pf::TorchGenerator high((uint64_t{1} << 32) + 9), low(9);
  std::mt19937 oracle(9);
  for (int i = 0; i < 100; ++i) {
    uint32_t v = high.Random();
    REQUIRE(v == low.Random());
    REQUIRE(v == oracle());
  }
}

TEST_CASE("TorchGenerator random64 puts the first draw high", "[unit][prefetch]") {
  pf::TorchGenerator g(5);
  std::mt19937 oracle(5);
  uint64_t first = oracle();
  uint64_t second = oracle();
  CHECK(g.Random64() == ((first << 32) | second));
}

TEST_CASE("NumpyRandomState permutation and shuffle match numpy", "[unit][prefetch]") {
  for (const auto& v : pf::testing::kNumpyVectors) {
    INFO("seed " << v.seed << " n " << v.n);
    REQUIRE(pf::NumpyRandomState(v.seed).Permutation(v.n) == v.permutation);
    std::vector<uint64_t> list(v.n);
    for (uint64_t i = 0; i < v.n; ++i) list[i] = i;
    pf::NumpyRandomState(v.seed).Shuffle(list);
    REQUIRE(list == v.list_shuffle);
  }
}

TEST_CASE("NumpyRandomState random_interval masks and rejects", "[unit][prefetch]") {
  pf::NumpyRandomState rs(2024);
  std::mt19937 oracle(2024);
  // max = 5: mask 7; draws above 5 are rejected, the rest returned as they are.
  for (int i = 0; i < 200; ++i) {
    uint64_t expected;
    do {
      expected = oracle() & 7u;
    } while (expected > 5);
    REQUIRE(rs.RandomInterval(5) == expected);
  }
  CHECK(rs.RandomInterval(0) == 0);
}

TEST_CASE("NumpyRandomState uses 64-bit draws only above 2^32 - 1", "[unit][prefetch]") {
  pf::NumpyRandomState a(3), b(3);
  uint64_t big = (uint64_t{1} << 33) + 5;  // mask 2^34 - 1
  uint64_t v = a.RandomInterval(big);
  CHECK(v <= big);
  uint64_t expected;
  do {
    expected = b.NextUint64() & ((uint64_t{1} << 34) - 1);
  } while (expected > big);
  CHECK(v == expected);
}
