#include "partitioner/pack/placement.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <random>
#include <string>
#include <vector>

using clairfs::pack::PlacedFile;

namespace {

struct Files {
  std::vector<std::string> paths;
  std::vector<PlacedFile> placed;
};

Files RandomFiles(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::lognormal_distribution<double> size(11.5, 1.0);  // ~100 KiB median, a long tail
  Files f;
  f.paths.reserve(n);
  for (size_t i = 0; i < n; ++i)
    f.paths.push_back("class_" + std::to_string(i % 50) + "/img_" + std::to_string(i));
  for (size_t i = 0; i < n; ++i) f.placed.push_back({f.paths[i], static_cast<uint64_t>(size(rng))});
  return f;
}

std::vector<uint64_t> Loads(const Files& f, const std::vector<uint32_t>& parts, uint32_t P) {
  std::vector<uint64_t> loads(P);
  for (size_t i = 0; i < parts.size(); ++i) {
    REQUIRE(parts[i] < P);
    loads[parts[i]] += f.placed[i].size;
  }
  return loads;
}

double MaxOverMean(const std::vector<uint64_t>& loads) {
  uint64_t total = 0;
  for (uint64_t l : loads) total += l;
  return static_cast<double>(*std::max_element(loads.begin(), loads.end())) * loads.size() / total;
}

}  // namespace

TEST_CASE("balanced placement evens out bytes", "[placement]") {
  const Files f = RandomFiles(20000, 7);
  for (uint32_t P : {1u, 2u, 7u, 64u}) {
    const auto parts = clairfs::pack::BalancedPlacement().Assign(f.placed, P);
    const auto loads = Loads(f, parts, P);
    INFO("P = " << P);
    CHECK(MaxOverMean(loads) < 1.01);
  }
}

TEST_CASE("balanced placement with a few huge files stays near the bound", "[placement]") {
  Files f = RandomFiles(1000, 3);
  f.placed[0].size = 1ull << 33;  // one file larger than all the rest
  const auto parts = clairfs::pack::BalancedPlacement().Assign(f.placed, 4);
  const auto loads = Loads(f, parts, 4);
  // The huge file sits alone; everything else goes to the other three.
  CHECK(std::count(parts.begin(), parts.end(), parts[0]) == 1);
}

TEST_CASE("hash placement depends on the path only", "[placement]") {
  const Files f = RandomFiles(5000, 1);
  const auto a = clairfs::pack::HashPlacement().Assign(f.placed, 16);
  Files g = f;
  for (auto& p : g.placed) p.size = 1;  // sizes do not matter
  std::reverse(g.placed.begin(), g.placed.end());
  const auto b = clairfs::pack::HashPlacement().Assign(g.placed, 16);
  for (size_t i = 0; i < a.size(); ++i) REQUIRE(a[i] == b[a.size() - 1 - i]);
  std::map<uint32_t, int> counts;
  for (uint32_t p : a) ++counts[p];
  CHECK(counts.size() == 16);
  for (auto& [p, n] : counts) CHECK(n > 5000 / 16 / 2);
}

TEST_CASE("contiguous placement cuts the list into ordered runs of similar bytes", "[placement]") {
  const Files f = RandomFiles(10000, 5);
  const uint32_t P = 8;
  const auto parts = clairfs::pack::ContiguousPlacement().Assign(f.placed, P);
  CHECK(std::is_sorted(parts.begin(), parts.end()));
  CHECK(parts.front() == 0);
  CHECK(parts.back() == P - 1);
  CHECK(MaxOverMean(Loads(f, parts, P)) < 1.05);
}

TEST_CASE("contiguous placement of empty files cuts by count", "[placement]") {
  Files f = RandomFiles(100, 2);
  for (auto& p : f.placed) p.size = 0;
  const auto parts = clairfs::pack::ContiguousPlacement().Assign(f.placed, 4);
  CHECK(std::is_sorted(parts.begin(), parts.end()));
  CHECK(std::count(parts.begin(), parts.end(), 3u) == 25);
}

TEST_CASE("placement names", "[placement]") {
  CHECK(clairfs::pack::MakePlacement("balanced").ok());
  CHECK(clairfs::pack::MakePlacement("hash").ok());
  CHECK(clairfs::pack::MakePlacement("contiguous").ok());
  auto bad = clairfs::pack::MakePlacement("round-robin");
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.status().message(), Catch::Contains("round-robin"));
}
