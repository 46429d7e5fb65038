// The planner wired the way the daemon will wire it: a ReadOrder built from a
// listing, dataset indices mapped to manifest file ids through their paths.
#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <string>

#include "prefetch/options/read_order.hpp"
#include "prefetch/order/read_window.hpp"
#include "prefetch/planner/first_readers.hpp"
#include "prefetch/planner/planner.hpp"
#include "tests/support/node_sim.hpp"

namespace pf = clairfs::prefetch;
using pf::FileId;

namespace {

// A tree of 3 classes x 80 images plus a non-image file, and a "manifest"
// that numbers files in its own (reverse sorted) order.
struct Tree {
  pf::Listing listing;
  std::map<std::string, FileId> manifest;
  std::vector<uint64_t> sizes;

  Tree() {
    std::vector<std::string> paths = {"README.txt"};
    for (std::string c : {"cat", "dog", "eel"}) {
      for (int i = 0; i < 80; ++i) paths.push_back(c + "/" + std::to_string(1000 + i) + ".jpg");
    }
    listing = pf::ListingFromPaths(paths).value();
    std::sort(paths.rbegin(), paths.rend());
    for (const std::string& p : paths) {
      manifest[p] = static_cast<FileId>(manifest.size());
      sizes.push_back(1000 + 37 * manifest.size() % 5000);
    }
  }

  pf::PlannerInput Input(const pf::ReadOrder& order) const {
    pf::PlannerInput in;
    in.order = pf::OrderSourceFromSampler(order.sampler());
    for (const std::string& p : order.dataset().paths) in.file_of_index.push_back(manifest.at(p));
    in.file_size = pf::ShareSizes(sizes);
    return in;
  }

  std::vector<FileId> Files(const std::vector<std::string>& paths) const {
    std::vector<FileId> out;
    for (const std::string& p : paths) out.push_back(manifest.at(p));
    return out;
  }
};

}  // namespace

TEST_CASE("Planner over ReadOrder: DistributedSampler on ImageFolder, node 1 of 2",
          "[unit][planner]") {
  Tree tree;
  pf::OrderSpec spec;
  spec.distributed.num_replicas = 4;
  spec.distributed.seed = 17;
  pf::ReadOrder order = pf::ReadOrder::Build(spec, &tree.listing).value();
  pf::PlannerConfig c;
  c.local_ranks = pf::BlockLocalRanks(1, 2, 4);  // ranks 2 and 3
  c.end_epoch = 3;
  c.batch_size = 2;
  c.num_workers = 2;
  c.budget_bytes = 40 * 3000;
  clairfs::FakeClock clock;
  auto planner = std::move(pf::Planner::Create(c, tree.Input(order), clock)).value();
  pf::NodeSimOptions o;
  o.loader = {2, 2, 2, false};
  pf::NodeSim sim(*planner, clock, tree.sizes, o);
  for (uint64_t e = 0; e < 3; ++e) {
    sim.RunEpoch({tree.Files(order.Paths(2, e).value()), tree.Files(order.Paths(3, e).value())});
  }
  INFO(sim.report().first_problem);
  REQUIRE(sim.report().budget_violations == 0);
  CHECK(sim.report().ReadyFraction(2 * 5 * 2) >= 0.99);
  pf::PlannerStats s = planner->Stats();
  CHECK(s.opens == 3 * 120);
  CHECK(s.predicted_opens == s.opens);
}

TEST_CASE("Planner over ReadOrder: a read window", "[unit][planner]") {
  // An order known only up to a window of 32 (what was assumed for Keras >=
  // 3.3 before its tf.data shuffle was modelled exactly), over a Keras listing.
  Tree tree;
  pf::OrderSpec spec;
  spec.kind = pf::SamplerKind::kKeras;
  spec.keras.version = {3, 2};
  spec.keras.seed = 5;
  spec.keras.batch_size = 4;
  pf::ReadOrder order = pf::ReadOrder::Build(spec, &tree.listing).value();
  const uint64_t kWindow = 32;
  pf::PlannerConfig c;
  c.local_ranks = {0};
  c.end_epoch = 2;
  c.batch_size = 4;
  c.read_window = kWindow;
  c.budget_bytes = 100 * 3000;
  clairfs::FakeClock clock;
  auto planner = std::move(pf::Planner::Create(c, tree.Input(order), clock)).value();
  pf::NodeSimOptions o;
  o.loader.batch_size = 4;
  pf::NodeSim sim(*planner, clock, tree.sizes, o);
  for (uint64_t e = 0; e < 2; ++e) {
    // Follow the rule with ReadWindow: each open is one of the current candidates.
    std::vector<pf::Index> base = order.sampler().Order(0, e).value();
    pf::ReadWindow window = pf::ReadWindow::Create(base, kWindow).value();
    std::vector<FileId> opens;
    for (uint64_t i = 0; window.remaining() > 0; ++i) {
      std::vector<pf::Index> cand = window.Candidates();
      pf::Index pick = cand[(i * 7 + e) % cand.size()];
      REQUIRE(window.MarkRead(pick).value());
      opens.push_back(tree.manifest.at(order.dataset().paths[pick]));
    }
    sim.OpenSequence(opens);
  }
  INFO(sim.report().first_problem);
  REQUIRE(sim.report().budget_violations == 0);
  pf::PlannerStats s = planner->Stats();
  CHECK(s.deviations == 0);
  CHECK(s.predicted_opens == 2 * 240);
  CHECK(sim.report().ReadyFraction(32) >= 0.99);
}

TEST_CASE("the node that reads each file first: earliest position, a tie to the lower node") {
  // Ranks 0 and 1 on node 0, rank 2 on node 1. Index 5 has no file; file 4
  // is read by nobody; file ids are the indices reversed (file = 5 - index).
  const std::vector<std::vector<pf::Index>> orders = {{0, 1}, {2, 5}, {3, 2}};
  const std::vector<int> node_of = {0, 0, 1};
  const std::vector<FileId> file_of_index = {5, 4, 3, 2, 1, pf::kNoFile};
  const std::vector<int> first = pf::FirstReadingNodes(orders, node_of, file_of_index, 7);
  // index 0 (file 5): node 0 at 0; index 2 (file 3): rank 1 at 0 (node 0)
  // before rank 2 at 1; index 3 (file 2): node 1 at 0; index 1 (file 4):
  // node 0 at 1; file 0, 1 and 6: nobody.
  CHECK(first == std::vector<int>{-1, -1, 1, 0, 0, 0, -1});
  // A tie at the same position goes to the lower node, whichever rank comes first.
  CHECK(pf::FirstReadingNodes({{0}, {0}}, {1, 0}, {0}, 1) == std::vector<int>{0});
}
