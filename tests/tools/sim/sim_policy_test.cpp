// The simulator's policies, against cases worked out by hand.
#include <catch2/catch.hpp>
#include <vector>

#include "tools/sim/fanstore_source.hpp"
#include "tools/sim/job.hpp"

using namespace clairfs;
using namespace clairfs::sim;

namespace {

// Each rank's order, the same every epoch.
class FixedOrder final : public prefetch::Sampler {
 public:
  FixedOrder(uint64_t files, std::vector<std::vector<prefetch::Index>> orders)
      : files_(files), orders_(std::move(orders)) {}
  uint64_t world_size() const override { return orders_.size(); }
  uint64_t dataset_size() const override { return files_; }
  Result<std::vector<prefetch::Index>> Order(uint64_t rank, uint64_t) const override {
    return orders_[rank];
  }

 private:
  uint64_t files_;
  std::vector<std::vector<prefetch::Index>> orders_;
};

}  // namespace

TEST_CASE("FanStore: partitions staged before training, local reads from the SSD", "[sim]") {
  // 4 files of 100 B in 2 partitions (files 0-1 on node 0, 2-3 on node 1).
  // Staging: 2 x 200 B through the shared file system at 100 B/s together
  // (4 s), then 0.2 s into each SSD (1000 B/s): training starts at 4.2.
  // Each local read takes 0.1 s: batches ready at 4.3 and 4.4; steps of 0.5 s
  // at 4.3-4.8 and 4.8-5.3. The second epoch: reads 5.3-5.4, 5.4-5.5, steps
  // 5.4-5.9, 5.9-6.4.
  EventLoop loop;
  const std::vector<uint64_t> bytes(4, 100);
  SharedDevice fs(&loop, DeviceSpec{.bandwidth = 100});
  FanStoreSource fan(&loop, &fs, &bytes, 2, 2,
                     NodeSpec{.ssd = {.bandwidth = 1000}, .link = {.bandwidth = 100}});
  FixedOrder order(4, {{0, 1}, {2, 3}});
  JobSpec job{.nodes = 2,
              .batch_size = 1,
              .compute_seconds = 0.5,
              .epochs = 2,
              .workers = 1,
              .prefetch_factor = 2};
  auto r = RunJob(&loop, job, order, &fan);
  REQUIRE(r.ok());
  CHECK(fan.staging_seconds() == Approx(4.2));
  CHECK((*r)[0].seconds == Approx(5.3));
  CHECK((*r)[1].seconds == Approx(1.1));
  CHECK((*r)[0].sources.local_bytes == 400);
  CHECK((*r)[0].sources.peer_bytes == 0);
  CHECK(fs.counters().bytes == 400);  // staging only: nothing read from there again
}

TEST_CASE("FanStore: another node's file is its SSD, then its link", "[sim]") {
  // Each rank reads the other node's file: 0.1 s on the home's SSD, 1 s on
  // its link (100 B/s), after staging (4.2 s as above): ready at 5.3.
  EventLoop loop;
  const std::vector<uint64_t> bytes(4, 100);
  SharedDevice fs(&loop, DeviceSpec{.bandwidth = 100});
  FanStoreSource fan(&loop, &fs, &bytes, 2, 2,
                     NodeSpec{.ssd = {.bandwidth = 1000}, .link = {.bandwidth = 100}});
  CHECK(fan.HomeOf(1) == 0);
  CHECK(fan.HomeOf(2) == 1);
  FixedOrder order(4, {{2}, {0}});
  JobSpec job{.nodes = 2, .batch_size = 1, .compute_seconds = 0.5, .workers = 1};
  auto r = RunJob(&loop, job, order, &fan);
  REQUIRE(r.ok());
  CHECK((*r)[0].seconds == Approx(5.8));
  CHECK((*r)[0].sources.peer_bytes == 200);
  CHECK((*r)[0].sources.local_bytes == 0);
}
