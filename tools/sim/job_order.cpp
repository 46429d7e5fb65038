#include "tools/sim/job_order.hpp"

#include <algorithm>
#include <charconv>
#include <random>
#include <utility>
#include <vector>

#include "prefetch/keras/keras_flow.hpp"
#include "prefetch/options/sampler_settings.hpp"
#include "prefetch/torch/distributed_sampler.hpp"

namespace clairfs::sim {
namespace {

using prefetch::Index;

std::string Padded(uint64_t value, uint64_t largest) {
  const std::string digits = std::to_string(largest);
  std::string v = std::to_string(value);
  return std::string(digits.size() - v.size(), '0') + v;
}

// The file a synthetic path names: the number after "img_".
Result<uint64_t> FileOfPath(const std::string& path) {
  const size_t at = path.rfind("/img_");
  uint64_t file = 0;
  if (at == std::string::npos) return Status::InvalidArgument("not a synthetic path: " + path);
  const char* begin = path.data() + at + 5;
  auto [end, ec] = std::from_chars(begin, path.data() + path.size(), file);
  if (ec != std::errc() || end == begin)
    return Status::InvalidArgument("not a synthetic path: " + path);
  return file;
}

// Every rank reads the one stream of a Keras generator: each rank runs the
// same generator with the same seed (world_size 1), as the daemon's shared
// stream has it.
class SharedStream final : public prefetch::Sampler {
 public:
  SharedStream(std::shared_ptr<const prefetch::ReadOrder> generator, std::vector<uint64_t> files,
               uint64_t world, uint64_t batch_size, uint64_t batch_seed)
      : generator_(std::move(generator)),
        file_of_index_(std::move(files)),
        flow_(dynamic_cast<const prefetch::KerasFlow*>(&generator_->sampler())),
        world_(world),
        batch_size_(std::max<uint64_t>(1, batch_size)),
        batch_seed_(batch_seed) {}

  uint64_t world_size() const override { return world_; }
  uint64_t dataset_size() const override { return file_of_index_.size(); }

  Result<std::vector<Index>> Order(uint64_t rank, uint64_t epoch) const override {
    if (rank >= world_) {
      return Status::InvalidArgument("rank " + std::to_string(rank) + " of " +
                                     std::to_string(world_));
    }
    auto indices = flow_ != nullptr ? FlowEpoch(epoch) : generator_->sampler().Order(0, epoch);
    if (!indices.ok()) return indices.status();
    for (Index& i : *indices) i = file_of_index_[i];
    return indices;
  }

 private:
  // The batches one run of fit trains on in `epoch`. The generator knows
  // their files exactly but, where fit shuffles the batch order or a
  // read-ahead races the re-permutation, not which run happens: the index
  // array is the one drawn after the fewest reads with the last batch's
  // augmentation draws all made (a loader that reads no batch past the
  // epoch's steps), and Python's `random` (fit's batch order, seeded alike on
  // every rank) is stood for by a seeded shuffle.
  Result<std::vector<Index>> FlowEpoch(uint64_t epoch) const {
    auto draws = flow_->EpochDraws(epoch);
    if (!draws.ok()) return draws.status();
    auto array = flow_->PermutationAfter(draws->reads_min, draws->calls.back());
    if (!array.ok()) return array.status();
    std::vector<uint64_t> positions = flow_->EpochBatchPositions(epoch);
    if (!flow_->batch_order_exact()) {
      std::mt19937_64 rng(batch_seed_ + epoch);
      std::shuffle(positions.begin(), positions.end(), rng);
      positions.resize(std::min<uint64_t>(positions.size(), flow_->BatchReads(epoch)));
    }
    std::vector<Index> out;
    for (uint64_t k : positions) {
      const uint64_t start = std::min<uint64_t>(array->size(), k * batch_size_);
      const uint64_t end = std::min<uint64_t>(array->size(), start + batch_size_);
      out.insert(out.end(), array->begin() + static_cast<ptrdiff_t>(start),
                 array->begin() + static_cast<ptrdiff_t>(end));
    }
    return out;
  }

  std::shared_ptr<const prefetch::ReadOrder> generator_;
  std::vector<uint64_t> file_of_index_;
  const prefetch::KerasFlow* flow_;
  uint64_t world_;
  uint64_t batch_size_;  // keras-flow's: an index array's slice
  uint64_t batch_seed_;
};

// The daemon's prefetch_<name> settings for the config's generator.
prefetch::GivenSettings KerasSettings(const SimConfig& c) {
  prefetch::GivenSettings given;
  given.names = prefetch::SettingNames::kKeys;
  const bool flow = c.order == OrderKind::kKerasFlow;
  given.values["sampler"] = flow ? "keras-flow" : "keras";
  given.values["seed"] = std::to_string(c.sampler_seed);
  if (!c.shuffle) given.values["no-shuffle"] = "";
  given.values["keras-version"] = c.keras_version;
  if (!flow) {
    // Pattern B: image_dataset_from_directory(batch_size=1), batched after the shard.
    given.values["batch-size"] = "1";
    return given;
  }
  given.values["batch-size"] = std::to_string(c.job.batch_size);
  given.values["protocol"] = "fit";
  given.values["fit-shuffle"] = c.fit_shuffle ? "on" : "off";
  if (c.steps_per_epoch != 0) given.values["steps-per-epoch"] = std::to_string(c.steps_per_epoch);
  if (!c.augment.empty()) given.values["augment"] = c.augment;
  return given;
}

}  // namespace

prefetch::Listing SyntheticListing(const SimConfig& config) {
  prefetch::Listing listing;
  const uint64_t classes = std::max<uint64_t>(1, config.classes);
  listing.files.reserve(config.files);
  for (uint64_t c = 0; c < classes; ++c) {
    const std::string dir = "class_" + Padded(c, classes - 1) + "/img_";
    const uint64_t first = c * config.files / classes;
    const uint64_t end = (c + 1) * config.files / classes;
    for (uint64_t i = first; i < end; ++i) {
      listing.files.push_back(dir + Padded(i, config.files - 1) + ".jpg");
    }
  }
  return listing;
}

Result<JobOrder> MakeJobOrder(const SimConfig& config) {
  JobOrder out;
  out.job = config.job;
  const uint64_t world = static_cast<uint64_t>(config.job.nodes) * config.job.ranks_per_node;
  if (config.order == OrderKind::kTorch) {
    prefetch::DistributedSamplerOptions options;
    options.num_replicas = world;
    options.seed = config.sampler_seed;
    options.shuffle = config.shuffle;
    options.drop_last = config.job.drop_last;
    auto sampler = prefetch::DistributedSampler::Create(config.files, options);
    if (!sampler.ok()) return sampler.status();
    out.sampler = std::make_unique<prefetch::DistributedSampler>(std::move(sampler).value());
    return out;
  }
  auto spec = prefetch::BuildOrderSpec(KerasSettings(config));
  if (!spec.ok()) return Status::InvalidArgument("sampler: " + spec.status().message());
  const prefetch::Listing listing = SyntheticListing(config);
  auto order = prefetch::ReadOrder::Build(*spec, &listing);
  if (!order.ok()) return Status::InvalidArgument("sampler: " + order.status().message());
  if (order->window() != 1) {
    return Status::InvalidArgument(
        "sampler: this Keras version's order is known only within a window of " +
        std::to_string(order->window()) + " files, not exactly");
  }
  out.generator = std::make_shared<const prefetch::ReadOrder>(std::move(order).value());
  std::vector<uint64_t> file_of_index;
  file_of_index.reserve(out.generator->dataset().size());
  for (const std::string& path : out.generator->dataset().paths) {
    auto file = FileOfPath(path);
    if (!file.ok()) return file.status();
    file_of_index.push_back(*file);
  }
  out.sampler = std::make_unique<SharedStream>(out.generator, std::move(file_of_index), world,
                                               spec->keras_flow.batch_size, config.sampler_seed);
  // Pattern B shards after loading: a step's batch_size samples are every
  // ranks-th of batch_size x ranks files read.
  if (config.order == OrderKind::kKeras) out.job.batch_size = config.job.batch_size * world;
  return out;
}

}  // namespace clairfs::sim
