// NodeReads, the simulator's per-node compact file ids, and the planner over
// them: a node's compact planner sees exactly the node's files and decides
// as the planner over the whole dataset does.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <memory>
#include <set>
#include <vector>

#include "base/clock.hpp"
#include "prefetch/planner/planner.hpp"
#include "prefetch/torch/distributed_sampler.hpp"
#include "tools/sim/job.hpp"
#include "tools/sim/node_reads.hpp"

using namespace clairfs;
using namespace clairfs::sim;

namespace {

constexpr uint64_t kFiles = 97;

prefetch::DistributedSampler Sampler(uint64_t world) {
  prefetch::DistributedSamplerOptions o;
  o.num_replicas = world;
  o.seed = 5;
  auto s = prefetch::DistributedSampler::Create(kFiles, o);
  REQUIRE(s.ok());
  return std::move(s).value();
}

// Sizes that differ, so that the budget binds unevenly.
std::vector<uint64_t> Sizes() {
  std::vector<uint64_t> sizes(kFiles);
  for (uint64_t f = 0; f < kFiles; ++f) sizes[f] = 100 + (f * 37) % 300;
  return sizes;
}

}  // namespace

TEST_CASE("NodeReads: each node's files are those its ranks read, its orders the sampler's",
          "[sim]") {
  const JobSpec job{.nodes = 3, .ranks_per_node = 2, .epochs = 2};
  const auto sampler = Sampler(6);
  auto reads = NodeReads::Build(sampler, job);
  REQUIRE(reads.ok());
  REQUIRE(reads->nodes() == 3);
  uint64_t listed = 0;
  for (uint32_t n = 0; n < 3; ++n) {
    std::set<uint64_t> read;
    for (uint32_t e = 0; e < 2; ++e) {
      auto orders = sampler.OrderRanks({2ull * n, 2ull * n + 1}, e);
      REQUIRE(orders.ok());
      for (uint32_t g = 0; g < 2; ++g) {
        const std::vector<uint32_t>& compact = reads->Order(n, e, g);
        REQUIRE(compact.size() == (*orders)[g].size());
        for (size_t i = 0; i < compact.size(); ++i) {
          CHECK(reads->Files(n)[compact[i]] == (*orders)[g][i]);
          read.insert((*orders)[g][i]);
        }
      }
    }
    const std::vector<uint32_t>& files = reads->Files(n);
    CHECK(std::vector<uint64_t>(files.begin(), files.end()) ==
          std::vector<uint64_t>(read.begin(), read.end()));
    listed += files.size();
    for (uint64_t f = 0; f < kFiles; ++f) {
      const prefetch::FileId c = reads->Find(n, f);
      if (read.count(f) != 0) {
        CHECK(files[c] == f);
      } else {
        CHECK(c == prefetch::kNoFile);
      }
    }
    // The planner's order source: the node's ranks only, the job's epochs only.
    auto source = reads->OrderSourceOf(n);
    auto got = source({2ull * n + 1}, 1);
    REQUIRE(got.ok());
    CHECK(std::vector<uint32_t>(got->front().begin(), got->front().end()) == reads->Order(n, 1, 1));
    CHECK(!source({(2ull * n + 2) % 6}, 0).ok());
    CHECK(!source({2ull * n}, 2).ok());
  }
  // Two epochs over three nodes: each node reads some of the files, not all.
  CHECK(listed < 3 * kFiles);
  CHECK(listed >= kFiles);
}

TEST_CASE("a node's planner over its compact ids decides as over the whole dataset", "[sim]") {
  // Node 1 of 3 (2 ranks each), 3 epochs, room for about a tenth of the
  // dataset: the two planners are driven with the node's reads, step by step
  // as its ranks read them, fetching whatever they ask for; every plan and
  // every open's outcome, translated, must be the same.
  const JobSpec job{.nodes = 3, .ranks_per_node = 2, .epochs = 3};
  const auto sampler = Sampler(6);
  auto reads = NodeReads::Build(sampler, job);
  REQUIRE(reads.ok());
  const uint32_t node = 1;
  const std::vector<uint32_t>& files = reads->Files(node);
  const std::vector<uint64_t> sizes = Sizes();

  prefetch::PlannerConfig config;
  config.local_ranks = {2, 3};
  config.end_epoch = job.epochs;
  config.batch_size = 2;
  config.num_workers = 1;
  config.prefetch_factor = 2;
  config.budget_bytes = 2500;
  prefetch::PlannerInput whole;
  whole.order = prefetch::OrderSourceFromSampler(sampler);
  whole.file_of_index.resize(kFiles);
  for (uint64_t f = 0; f < kFiles; ++f) whole.file_of_index[f] = static_cast<prefetch::FileId>(f);
  whole.file_size = prefetch::ShareSizes(sizes);
  prefetch::PlannerInput compact;
  compact.order = reads->OrderSourceOf(node);
  std::vector<uint64_t> compact_sizes;
  for (uint32_t f : files) {
    compact.file_of_index.push_back(static_cast<prefetch::FileId>(compact_sizes.size()));
    compact_sizes.push_back(sizes[f]);
  }
  compact.file_size = prefetch::ShareSizes(compact_sizes);
  FakeClock clock;
  auto a = prefetch::Planner::Create(config, whole, clock);
  auto b = prefetch::Planner::Create(config, compact, clock);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  const auto back = [&files](const std::vector<prefetch::FileId>& ids) {
    std::vector<prefetch::FileId> out;
    for (prefetch::FileId c : ids) out.push_back(files[c]);
    return out;
  };
  uint64_t opens = 0, ready = 0, fetches = 0;
  for (uint32_t e = 0; e < job.epochs; ++e) {
    const auto& o0 = reads->Order(node, e, 0);
    const auto& o1 = reads->Order(node, e, 1);
    for (size_t i = 0; i < o0.size(); ++i) {
      for (uint32_t c : {o0[i], o1[i]}) {
        const prefetch::FetchPlan pa = (*a)->NextFetches(3);
        const prefetch::FetchPlan pb = (*b)->NextFetches(3);
        REQUIRE(back(pb.fetch) == pa.fetch);
        REQUIRE(back(pb.evict) == pa.evict);
        for (size_t k = 0; k < pa.fetch.size(); ++k) {
          REQUIRE(back((*b)->OnFetched(pb.fetch[k], compact_sizes[pb.fetch[k]])) ==
                  (*a)->OnFetched(pa.fetch[k], sizes[pa.fetch[k]]));
        }
        fetches += pa.fetch.size();
        const prefetch::OpenResult ra = (*a)->OnOpen(files[c]);
        const prefetch::OpenResult rb = (*b)->OnOpen(c);
        REQUIRE(ra.ready == rb.ready);
        REQUIRE(ra.in_flight == rb.in_flight);
        REQUIRE(ra.predicted == rb.predicted);
        ++opens;
        ready += ra.ready ? 1 : 0;
      }
    }
  }
  // 97 files over 6 ranks: 17 each (padded), every open played; both
  // outcomes occurred, and files were fetched again after an eviction.
  CHECK(opens == 3 * 2 * 17);
  CHECK(ready > 0);
  CHECK(ready < opens);
  CHECK(fetches > files.size());
}
