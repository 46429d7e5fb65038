// clairfs-sim's config and its runs per policy.
#include "tools/sim/sim_config.hpp"

#include <catch2/catch.hpp>
#include <string>

#include "prefetch/torch/distributed_sampler.hpp"
#include "tests/tools/sim/order_bytes.hpp"
#include "tools/sim/simulate.hpp"

using namespace clairfs;
using namespace clairfs::sim;

TEST_CASE("a config sets what it names and keeps the defaults of the rest", "[sim]") {
  auto c = ParseSimConfig(R"(
job: {nodes: 4, ranks_per_node: 2, batch_size: 16, compute_seconds: 0.25, epochs: 3}
dataset: {files: 1000, file_size: 64K, file_size_stdev: 8K, seed: 3}
shared_fs: {bandwidth: 1G, iops: 2000, open_latency_ms: 0.5}
node: {ssd_bandwidth: 500M, link_latency_us: 2}
policies: [fanstore]
)");
  REQUIRE(c.ok());
  CHECK(c->job.nodes == 4);
  CHECK(c->job.ranks_per_node == 2);
  CHECK(c->job.compute_seconds == Approx(0.25));
  CHECK(c->job.workers == 2);  // the default
  CHECK(c->file_size == 64 << 10);
  CHECK(c->shared_fs.bandwidth == Approx(1 << 30));
  CHECK(c->shared_fs.latency == Approx(0.0005));
  CHECK(c->node.ssd.bandwidth == Approx(500 << 20));
  CHECK(c->node.link.latency == Approx(2e-6));
  CHECK(c->partitions == 16);  // 4 per node
  CHECK(c->policies == std::vector<std::string>{"fanstore"});
  const auto sizes = DatasetSizes(*c);
  REQUIRE(sizes.size() == 1000);
  CHECK(sizes == DatasetSizes(*c));  // the same for the same seed
  CHECK(*std::min_element(sizes.begin(), sizes.end()) < (64u << 10));
  CHECK(*std::max_element(sizes.begin(), sizes.end()) > (64u << 10));
  CHECK(ParseSimConfig("")->partitions == 4);
}

TEST_CASE("every problem of a config is named at once", "[sim]") {
  auto c = ParseSimConfig(R"(
job: {nodes: 0, epochs: two, speed: 3}
shared_fs: {bandwidth: fast}
policies: [fanstore, magic]
extra: 1
)");
  REQUIRE_FALSE(c.ok());
  const std::string m = c.status().message();
  for (const char* want : {"job.nodes: bad value '0'", "job.epochs: bad value 'two'",
                           "job.speed: unknown key", "shared_fs.bandwidth: bad value 'fast'",
                           "unknown policy 'magic'", "extra: unknown section"}) {
    INFO(want);
    CHECK(m.find(want) != std::string::npos);
  }
  CHECK_FALSE(ParseSimConfig("job: [1, 2").ok());
  CHECK(LoadSimConfig("/nonexistent/cluster.yaml").status().message().find("cannot read") !=
        std::string::npos);
}

TEST_CASE("each policy serves every read once, its bytes from one source", "[sim]") {
  auto c = ParseSimConfig(R"(
job: {nodes: 3, ranks_per_node: 2, batch_size: 4, compute_seconds: 0.01, epochs: 2}
dataset: {files: 301, file_size: 10K, file_size_stdev: 3K}
)");
  REQUIRE(c.ok());
  const auto sizes = DatasetSizes(*c);
  prefetch::DistributedSamplerOptions o;
  o.num_replicas = 6;
  auto sampler = prefetch::DistributedSampler::Create(sizes.size(), o);
  REQUIRE(sampler.ok());
  for (const std::string policy : {"shared-fs", "fanstore"}) {
    auto run = RunPolicy(*c, policy, sizes);
    REQUIRE(run.ok());
    REQUIRE(run->epochs.size() == 2);
    uint64_t staged = 0;
    for (uint32_t e = 0; e < 2; ++e) {
      const uint64_t want = testing::OrderBytes(*sampler, e, sizes);
      const SourceCounters& s = run->epochs[e].sources;
      INFO(policy << " epoch " << e);
      CHECK(s.ram_bytes + s.local_bytes + s.peer_bytes + s.shared_fs_bytes == want);
      CHECK(s.reads == 6 * sampler->num_samples());
      staged += s.shared_fs_bytes;
    }
    if (policy == "fanstore") {
      // The shared file system was read once, by staging, whole.
      CHECK(staged == 0);
      uint64_t all = 0;
      for (uint64_t s : sizes) all += s;
      CHECK(run->shared_fs_bytes == all);
      CHECK(run->staging_seconds > 0);
    } else {
      CHECK(run->shared_fs_bytes == staged);
    }
  }
}
