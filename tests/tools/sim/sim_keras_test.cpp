// The simulated job's order from the project's Keras generators
// (sampler.kind): the config's keys, each rank's reads against the generator
// built as the daemon builds it, and every policy's bytes adding up.
#include <catch2/catch.hpp>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "prefetch/keras/keras_flow.hpp"
#include "prefetch/options/sampler_settings.hpp"
#include "tests/tools/sim/order_bytes.hpp"
#include "tools/sim/job_order.hpp"
#include "tools/sim/simulate.hpp"

using namespace clairfs;
using namespace clairfs::sim;

namespace {

// Records every read by node, each served at once.
class RecordingSource final : public DataSource {
 public:
  RecordingSource(EventLoop* loop, uint32_t nodes) : loop_(loop), read(nodes) {}
  void Read(uint32_t node, uint64_t file, EventLoop::Fn done) override {
    counters_.reads++;
    read[node].push_back(file);
    loop_->After(0, std::move(done));
  }
  EventLoop* loop_;
  std::vector<std::vector<uint64_t>> read;
};

// The generator as the daemon builds it from its prefetch_<name> settings,
// over the config's synthetic listing; its indices turned into the
// listing's positions.
struct Generator {
  prefetch::ReadOrder order;
  std::vector<uint64_t> file_of_index;
};
Generator BuildGenerator(const SimConfig& c, const std::map<std::string, std::string>& values) {
  prefetch::GivenSettings given;
  given.names = prefetch::SettingNames::kKeys;
  given.values = values;
  auto spec = prefetch::BuildOrderSpec(given);
  REQUIRE(spec.ok());
  const prefetch::Listing listing = SyntheticListing(c);
  auto order = prefetch::ReadOrder::Build(*spec, &listing);
  REQUIRE(order.ok());
  std::map<std::string, uint64_t> position;
  for (uint64_t i = 0; i < listing.files.size(); ++i) position[listing.files[i]] = i;
  Generator g{std::move(order).value(), {}};
  for (const auto& p : g.order.dataset().paths) g.file_of_index.push_back(position.at(p));
  return g;
}

// Runs the config's job with every read recorded, by node.
std::vector<std::vector<uint64_t>> ReadsByNode(const SimConfig& c) {
  auto order = MakeJobOrder(c);
  REQUIRE(order.ok());
  EventLoop loop;
  RecordingSource source(&loop, c.job.nodes);
  auto epochs = RunJob(&loop, order->job, *order->sampler, &source);
  REQUIRE(epochs.ok());
  return source.read;
}

}  // namespace

TEST_CASE("sampler.kind and the Keras keys: parsed, and every bad value named", "[sim]") {
  auto c = ParseSimConfig(R"(
dataset: {files: 64, classes: 4}
sampler: {kind: keras-flow, seed: 42, keras_version: "2.15", steps_per_epoch: 3,
          augment: "horizontal_flip=1,rotation_range=10", fit_shuffle: false}
)");
  REQUIRE(c.ok());
  CHECK(c->order == OrderKind::kKerasFlow);
  CHECK(c->classes == 4);
  CHECK(c->keras_version == "2.15");
  CHECK(c->steps_per_epoch == 3);
  CHECK(c->augment == "horizontal_flip=1,rotation_range=10");
  CHECK_FALSE(c->fit_shuffle);
  CHECK(ParseSimConfig("")->order == OrderKind::kTorch);
  CHECK(ParseSimConfig("sampler: {kind: keras}")->order == OrderKind::kKeras);
  CHECK(ParseSimConfig("sampler: {kind: torch}")->order == OrderKind::kTorch);

  auto bad = ParseSimConfig(R"(
dataset: {classes: 0}
sampler: {kind: tf, keras_version: two, augment: "warp=3", steps_per_epoch: 0, fit_shuffle: maybe}
)");
  REQUIRE_FALSE(bad.ok());
  std::string m = bad.status().message();
  for (const char* want :
       {"dataset.classes: bad value '0'", "sampler.kind: bad value 'tf'",
        "sampler.keras_version: bad value 'two'", "sampler.augment: bad value 'warp=3'",
        "sampler.steps_per_epoch: bad value '0'", "sampler.fit_shuffle: bad value 'maybe'"}) {
    INFO(want);
    CHECK(m.find(want) != std::string::npos);
  }
  auto misplaced = ParseSimConfig(R"(
sampler: {keras_version: "2.15"}
)");
  REQUIRE_FALSE(misplaced.ok());
  CHECK(misplaced.status().message() == "sampler.keras_version: for kind keras or keras-flow only");
  auto not_flow = ParseSimConfig(R"(
sampler: {kind: keras, seed: 4294967296, steps_per_epoch: 2, fit_shuffle: true}
)");
  REQUIRE_FALSE(not_flow.ok());
  m = not_flow.status().message();
  for (const char* want : {"sampler.seed: Keras's generators take a seed below 2^32",
                           "sampler.steps_per_epoch: for kind keras-flow only",
                           "sampler.fit_shuffle: for kind keras-flow only"}) {
    INFO(want);
    CHECK(m.find(want) != std::string::npos);
  }
}

TEST_CASE("the synthetic listing: files spread over class directories, in sorted order", "[sim]") {
  auto c = ParseSimConfig("dataset: {files: 11, classes: 3}");
  REQUIRE(c.ok());
  const auto listing = SyntheticListing(*c);
  REQUIRE(listing.files.size() == 11);
  CHECK(std::is_sorted(listing.files.begin(), listing.files.end()));
  CHECK(listing.files.front() == "class_0/img_00.jpg");
  CHECK(listing.files[3] == "class_1/img_03.jpg");  // class 1 from 11 / 3 on
  CHECK(listing.files[7] == "class_2/img_07.jpg");  // class 2 from 22 / 3 on
  CHECK(listing.files.back() == "class_2/img_10.jpg");
}

TEST_CASE("keras: every rank reads the whole of the generator's order, in order", "[sim]") {
  auto c = ParseSimConfig(R"(
job: {nodes: 2, ranks_per_node: 1, batch_size: 5, epochs: 2, workers: 1, prefetch_factor: 1}
dataset: {files: 100, classes: 4}
sampler: {kind: keras, seed: 7}
)");
  REQUIRE(c.ok());
  auto order = MakeJobOrder(*c);
  REQUIRE(order.ok());
  CHECK(order->job.batch_size == 10);  // sharded after loading: 5 samples of 10 files read
  const Generator g = BuildGenerator(
      *c, {{"sampler", "keras"}, {"seed", "7"}, {"keras-version", "2.15"}, {"batch-size", "1"}});
  std::vector<uint64_t> want;
  for (uint64_t e = 0; e < 2; ++e) {
    auto indices = g.order.sampler().Order(0, e);
    REQUIRE(indices.ok());
    for (auto i : *indices) want.push_back(g.file_of_index[i]);
  }
  REQUIRE(want.size() == 200);
  std::vector<uint64_t> sorted(want.begin(), want.begin() + 100);
  std::sort(sorted.begin(), sorted.end());
  CHECK(sorted.front() == 0);
  CHECK(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end());  // each file once
  const auto read = ReadsByNode(*c);
  CHECK(read[0] == want);
  CHECK(read[1] == want);
}

TEST_CASE("keras-flow: where fit's order is exact, each rank reads the generator's", "[sim]") {
  auto c = ParseSimConfig(R"(
job: {nodes: 2, ranks_per_node: 1, batch_size: 4, epochs: 3, workers: 1, prefetch_factor: 1}
dataset: {files: 30, classes: 3}
sampler: {kind: keras-flow, seed: 5, fit_shuffle: false, augment: "rotation_range=10"}
)");
  REQUIRE(c.ok());
  const Generator g = BuildGenerator(*c, {{"sampler", "keras-flow"},
                                          {"seed", "5"},
                                          {"keras-version", "2.15"},
                                          {"batch-size", "4"},
                                          {"protocol", "fit"},
                                          {"fit-shuffle", "off"},
                                          {"augment", "rotation_range=10"}});
  const auto& flow = dynamic_cast<const prefetch::KerasFlow&>(g.order.sampler());
  auto lead = flow.PreTrainingBatches();
  REQUIRE(lead.ok());
  REQUIRE(lead->size() == 1);  // tf.keras 2 peeks batch 0: before the first epoch, not in it
  std::vector<uint64_t> want;
  for (uint64_t e = 0; e < 3; ++e) {
    auto indices = flow.Order(0, e);
    REQUIRE(indices.ok());
    const size_t skip = e == 0 ? lead->front().size() : 0;
    for (size_t k = skip; k < indices->size(); ++k) want.push_back(g.file_of_index[(*indices)[k]]);
  }
  CHECK(want.size() == 90);
  const auto read = ReadsByNode(*c);
  CHECK(read[0] == want);
  CHECK(read[1] == want);
}

TEST_CASE("keras-flow with fit's shuffle and steps_per_epoch: whole candidate batches, alike",
          "[sim]") {
  auto c = ParseSimConfig(R"(
job: {nodes: 2, ranks_per_node: 1, batch_size: 4, epochs: 2, workers: 1, prefetch_factor: 1}
dataset: {files: 40, classes: 2}
sampler: {kind: keras-flow, seed: 9, steps_per_epoch: 5}
)");
  REQUIRE(c.ok());
  const Generator g = BuildGenerator(*c, {{"sampler", "keras-flow"},
                                          {"seed", "9"},
                                          {"keras-version", "2.15"},
                                          {"batch-size", "4"},
                                          {"protocol", "fit"},
                                          {"steps-per-epoch", "5"}});
  const auto& flow = dynamic_cast<const prefetch::KerasFlow&>(g.order.sampler());
  const auto read = ReadsByNode(*c);
  CHECK(read[0] == read[1]);  // fit's batch order is seeded alike on every rank
  REQUIRE(read[0].size() == 2 * 5 * 4);
  for (uint64_t e = 0; e < 2; ++e) {
    auto candidates = flow.EpochBatches(e);
    REQUIRE(candidates.ok());
    std::set<std::vector<uint64_t>> batches;
    for (const auto& b : *candidates) {
      std::vector<uint64_t> files;
      for (auto i : b) files.push_back(g.file_of_index[i]);
      batches.insert(files);
    }
    std::set<std::vector<uint64_t>> seen;
    for (uint64_t k = 0; k < 5; ++k) {
      const auto at = read[0].begin() + static_cast<ptrdiff_t>((e * 5 + k) * 4);
      const std::vector<uint64_t> batch(at, at + 4);
      INFO("epoch " << e << " batch " << k);
      CHECK(batches.count(batch) == 1);
      seen.insert(batch);
    }
    CHECK(seen.size() == 5);  // S different batches
  }
}

TEST_CASE("Keras orders: each policy's bytes add up, the shared file system's once", "[sim]") {
  for (const char* kind : {"keras", "keras-flow"}) {
    for (const char* shape : {"nodes: 2, ranks_per_node: 1", "nodes: 1, ranks_per_node: 2"}) {
      auto c = ParseSimConfig(std::string("job: {") + shape +
                              R"(, batch_size: 4, compute_seconds: 0.01, epochs: 2}
dataset: {files: 96, file_size: 10K, file_size_stdev: 3K, classes: 3}
sampler: {kind: )" + kind + R"(, seed: 3}
node: {page_cache: 1G}
)");
      REQUIRE(c.ok());
      const auto sizes = DatasetSizes(*c);
      uint64_t all = 0;
      for (uint64_t s : sizes) all += s;
      auto order = MakeJobOrder(*c);
      REQUIRE(order.ok());
      for (const std::string policy : {"shared-fs", "fanstore", "nopfs", "clairfs"}) {
        auto run = RunPolicy(*c, policy, sizes);
        REQUIRE(run.ok());
        REQUIRE(run->epochs.size() == 2);
        uint64_t reads = 0;
        for (uint32_t e = 0; e < 2; ++e) {
          const SourceCounters& s = run->epochs[e].sources;
          INFO(kind << ", " << shape << ", " << policy << ", epoch " << e);
          CHECK(s.ram_bytes + s.local_bytes + s.peer_bytes + s.shared_fs_bytes ==
                testing::OrderBytes(*order->sampler, e, sizes));
          reads += s.reads;
        }
        uint64_t want_reads = 0;
        for (uint32_t e = 0; e < 2; ++e) {
          for (uint64_t r = 0; r < order->sampler->world_size(); ++r) {
            want_reads += order->sampler->Order(r, e)->size();
          }
        }
        CHECK(reads == want_reads);
        INFO(kind << ", " << shape << ", " << policy);
        if (policy == "fanstore" || policy == "clairfs") CHECK(run->shared_fs_bytes == all);
        // One node's ranks read the same files together: its page cache
        // reads each from the shared file system once, the others wait for it.
        if (policy == "shared-fs" && c->job.nodes == 1) {
          CHECK(run->shared_fs_bytes <= all);
          CHECK(run->epochs[1].sources.shared_fs_bytes + run->epochs[0].sources.shared_fs_bytes ==
                run->shared_fs_bytes);
        }
      }
    }
  }
}

TEST_CASE("first_step_seconds: the job's first step only, while the loaders read on", "[sim]") {
  auto c = ParseSimConfig(R"(
job: {nodes: 1, ranks_per_node: 2, batch_size: 4, compute_seconds: 0.1, first_step_seconds: 2,
      epochs: 2, workers: 1, prefetch_factor: 1}
dataset: {files: 40, file_size: 1K}
shared_fs: {bandwidth: 1T, iops: 1000000000, open_latency_ms: 0}
policies: [shared-fs]
)");
  REQUIRE(c.ok());
  CHECK(c->job.first_step_seconds == 2);
  auto run = RunPolicy(*c, "shared-fs", DatasetSizes(*c));
  REQUIRE(run.ok());
  CHECK(run->epochs[0].seconds == Approx(2 + 5 * 0.1).epsilon(1e-4));
  CHECK(run->epochs[1].seconds == Approx(5 * 0.1).epsilon(1e-4));
}
