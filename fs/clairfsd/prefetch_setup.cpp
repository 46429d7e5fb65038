#include "fs/clairfsd/prefetch_setup.hpp"

#include <string>
#include <utility>
#include <vector>

#include "base/log.hpp"
#include "prefetch/options/sampler_settings.hpp"
#include "prefetch/planner/first_readers.hpp"

namespace clairfs::fs {
namespace {

namespace pf = clairfs::prefetch;

bool ParseSwitch(const std::string& v, bool* on) {
  if (v == "true" || v == "yes" || v == "on" || v == "1") return (*on = true);
  if (v == "false" || v == "no" || v == "off" || v == "0") return !(*on = false);
  return false;
}

}  // namespace

Result<pf::OrderSpec> OrderSpecFromConfig(const Config& c) {
  pf::GivenSettings given;
  given.names = pf::SettingNames::kKeys;
  given.values["sampler"] = c.prefetch_sampler;
  // The job's training processes are the DistributedSampler's replicas; a
  // Keras or tf.data batch shapes its order.
  given.job_world_size = c.prefetch_world_size;
  given.job_batch_size = c.prefetch_batch_size;
  std::vector<std::string> errors;
  for (const auto& [key, value] : c.prefetch_settings) {
    std::string name = key;
    for (char& ch : name) {
      if (ch == '_') ch = '-';
    }
    // A switch is true or false; the switch --no-X is also the key X, negated.
    const pf::SamplerSetting* row = pf::FindSamplerSetting(name);
    const pf::SamplerSetting* negated = row ? nullptr : pf::FindSamplerSetting("no-" + name);
    if (negated && !negated->is_switch) negated = nullptr;
    if ((!row && !negated) || name == "sampler") {
      errors.push_back("prefetch_" + key + ": unknown key");
    } else if (row && !row->is_switch) {
      given.values[name] = value;
    } else if (bool on = false; !ParseSwitch(value, &on)) {
      errors.push_back("prefetch_" + key + ": '" + value + "' is not true or false");
    } else if (row ? on : !on) {
      given.values[row ? name : "no-" + name] = "";
    }
  }
  uint64_t rank = 0;
  pf::OrderSpec spec;
  pf::BuildOrderSpec(given, &spec, &rank, &errors);
  if (!errors.empty()) {
    std::string msg;
    for (const std::string& e : errors) msg += (msg.empty() ? "" : "\n") + e;
    return Status::InvalidArgument(msg);
  }
  return spec;
}

Result<prefetch::Listing> ListingFromManifest(const format::Manifest& manifest, uint32_t root) {
  prefetch::Listing listing;
  // The walk of clairfs-order's ScanDirectory (and a sorted os.walk): depth
  // first, each directory's entries by name (the manifest keeps them sorted),
  // so that the list layout indexes the same files on both.
  std::vector<std::pair<uint32_t, std::string>> todo;
  auto push_children = [&](uint32_t dir, const std::string& prefix) {
    const uint32_t first = manifest.FirstChild(dir);
    for (uint32_t i = first + manifest.ChildCount(dir); i-- > first;) {
      todo.emplace_back(i, prefix + std::string(manifest.name(i)));
    }
  };
  push_children(root, "");
  while (!todo.empty()) {
    auto [node, path] = std::move(todo.back());
    todo.pop_back();
    if (!manifest.IsDirectory(node)) {
      listing.files.push_back(std::move(path));
    } else if (manifest.ChildCount(node) == 0) {
      listing.directories.push_back(std::move(path));
    } else {
      push_children(node, path + "/");
    }
  }
  return listing;
}

std::function<Result<std::vector<uint32_t>>(uint64_t, uint64_t)> PredictedFiles(
    const PrefetchJob& job) {
  return [order = job.order, file_of_index = job.input.file_of_index](
             uint64_t rank, uint64_t epoch) -> Result<std::vector<uint32_t>> {
    const pf::Sampler& sampler = order->sampler();
    if (sampler.world_size() == 1) rank = 0;
    auto batches = sampler.Batches(rank, epoch);
    if (!batches.ok()) return batches.status();
    if (batches->has_value()) return Status::Unsupported("the epoch's read order is unknowable");
    auto indices = sampler.Order(rank, epoch);
    if (!indices.ok()) return indices.status();
    std::vector<uint32_t> files;
    files.reserve(indices->size());
    for (pf::Index i : *indices) {
      if (i < file_of_index.size() && file_of_index[i] != pf::kNoFile) {
        files.push_back(file_of_index[i]);
      }
    }
    return files;
  };
}

uint64_t RanksPerNode(const Config& config, uint64_t nodes) {
  if (config.prefetch_ranks_per_node != 0) return config.prefetch_ranks_per_node;
  return std::max<uint64_t>(1, config.prefetch_world_size / std::max<uint64_t>(1, nodes));
}

Result<pf::FirstReads> FirstReaders(const Config& config, const format::Manifest& manifest,
                                    int nodes) {
  auto job = BuildPrefetchJob(config, manifest, 0, static_cast<uint64_t>(nodes));
  if (!job.ok()) return job.status();
  if (job->shared_stream) {
    return Status::Unsupported("every node's processes read one shared stream");
  }
  // Every rank's first epoch at once (a DistributedSampler draws one
  // permutation for all), each rank's node by Slurm's block order.
  const pf::Sampler& sampler = job->order->sampler();
  const uint64_t streams = sampler.world_size();
  const uint64_t epoch = config.prefetch_start_epoch;
  auto batches = sampler.Batches(0, epoch);
  if (!batches.ok()) return batches.status();
  if (batches->has_value()) return Status::Unsupported("the epoch's read order is unknowable");
  std::vector<uint64_t> ranks;
  std::vector<int> node_of;
  const uint64_t per_node = RanksPerNode(config, static_cast<uint64_t>(nodes));
  for (int n = 0; n < nodes; ++n) {
    for (uint64_t r : pf::BlockLocalRanks(static_cast<uint64_t>(n), per_node, streams)) {
      ranks.push_back(r);
      node_of.push_back(n);
    }
  }
  auto orders = sampler.OrderRanks(ranks, epoch);
  if (!orders.ok()) return orders.status();
  return pf::FirstReadsOf(*orders, node_of, job->input.file_of_index, manifest.node_count());
}

Result<PrefetchJob> BuildPrefetchJob(const Config& config, const format::Manifest& manifest,
                                     uint64_t node, uint64_t nodes) {
  auto root = manifest.Resolve(config.prefetch_root);
  if (!root.ok() || !manifest.IsDirectory(*root)) {
    return Status::InvalidArgument("prefetch_root: '" + config.prefetch_root +
                                   "' is not a directory of the dataset");
  }
  auto listing = ListingFromManifest(manifest, *root);
  if (!listing.ok()) return listing.status();
  return BuildPrefetchJobOver(config, manifest, *listing, node, nodes);
}

Result<PrefetchJob> BuildPrefetchJobOver(const Config& config, const format::Manifest& manifest,
                                         const pf::Listing& listing, uint64_t node, uint64_t nodes,
                                         const PrefetchJob* like) {
  auto spec = OrderSpecFromConfig(config);
  if (!spec.ok()) return spec.status();
  auto order = pf::ReadOrder::Build(*spec, &listing);
  if (!order.ok()) return order.status();

  PrefetchJob job;
  job.node = node;
  job.order = std::make_shared<const pf::ReadOrder>(std::move(*order));
  const pf::DatasetIndex& dataset = job.order->dataset();
  if (!job.order->has_paths()) {
    return Status::InvalidArgument("prefetch_order_file: an index order file needs the listing");
  }
  if (like != nullptr && like->order->dataset().paths == dataset.paths) {
    job.input.file_of_index = like->input.file_of_index;
    job.in_dataset = like->in_dataset;
    job.missing_files = like->missing_files;
    job.first_missing = like->first_missing;
  } else {
    const std::string base = config.prefetch_root.empty() ? "" : config.prefetch_root + "/";
    job.input.file_of_index.assign(dataset.size(), pf::kNoFile);
    job.in_dataset.assign(manifest.node_count(), 0);
    for (uint64_t i = 0; i < dataset.size(); ++i) {
      auto n = manifest.Resolve(base + dataset.paths[i]);
      if (!n.ok() || manifest.IsDirectory(*n)) {
        if (job.missing_files++ == 0) job.first_missing = base + dataset.paths[i];
        continue;
      }
      job.input.file_of_index[i] = *n;
      job.in_dataset[*n] = 1;
    }
  }
  if (dataset.size() > 0 && job.missing_files == dataset.size()) {
    return Status::InvalidArgument(
        "none of the " + std::to_string(dataset.size()) +
        " files the settings predict is in the dataset (first: " + job.first_missing + ")");
  }
  std::vector<uint64_t> sizes(manifest.node_count());
  for (uint32_t n = 0; n < manifest.node_count(); ++n) {
    sizes[n] = manifest.IsDirectory(n) ? 0 : manifest.node(n).size;
  }
  job.input.file_size = pf::ShareSizes(std::move(sizes));
  job.input.order = pf::OrderSourceFromSampler(job.order->sampler());
  // Samplers whose batch order is unknowable put the planner in batch mode.
  job.input.batches = pf::BatchSourceFromSampler(job.order->sampler());

  pf::PlannerConfig& pc = job.config;
  const uint64_t world = config.prefetch_world_size;
  const uint64_t per_node = RanksPerNode(config, nodes);
  // The training processes on this node (Slurm's block distribution), and the
  // order each follows: its own rank's, or rank 0's when they share a stream.
  const uint64_t streams = job.order->sampler().world_size();
  const bool shared = config.prefetch_shared_stream == "true" ||
                      (config.prefetch_shared_stream == "auto" && streams == 1);
  if (shared) {
    pc.local_ranks.assign(pf::BlockLocalRanks(node, per_node, world).size(), 0);
  } else {
    pc.local_ranks = pf::BlockLocalRanks(node, per_node, streams);
  }
  job.shared_stream = shared;
  pc.enabled = !pc.local_ranks.empty();
  pc.start_epoch = config.prefetch_start_epoch;
  pc.end_epoch = config.prefetch_start_epoch + config.prefetch_epochs;
  pc.batch_size = config.prefetch_batch_size;
  pc.num_workers = config.prefetch_workers;
  pc.prefetch_factor = config.prefetch_factor;
  pc.read_window = job.order->window();
  // The planner keeps the RAM cache's files (the engine is its owner).
  pc.budget_bytes = config.ram_cache;
  return job;
}

void LogPrefetchJob(const Config& config, const PrefetchJob& job, bool batch_mode) {
  if (job.missing_files > 0) {
    Log(LogLevel::kWarn, "prefetch: " + std::to_string(job.missing_files) + " of " +
                             std::to_string(job.order->dataset().size()) +
                             " predicted files are not in the dataset (first: " +
                             job.first_missing + "); their opens cannot be prepared");
  }
  if (!job.config.enabled) {
    Log(LogLevel::kWarn, "prefetch: none of the job's " +
                             std::to_string(config.prefetch_world_size) +
                             " training processes runs on node " + std::to_string(job.node) +
                             " (prefetch_world_size, prefetch_ranks_per_node): nothing is "
                             "predicted here");
  }
  std::string ranks;
  for (uint64_t r : job.config.local_ranks) ranks += (ranks.empty() ? "" : ",") + std::to_string(r);
  Log(LogLevel::kInfo,
      "prefetch: " + config.prefetch_sampler + " over " +
          std::to_string(job.order->dataset().size()) + " files, node " + std::to_string(job.node) +
          (job.shared_stream ? ", local readers of one shared stream [" : ", local ranks [") +
          ranks + "], budget " + std::to_string(job.config.budget_bytes) + " bytes" +
          (batch_mode ? "; batch mode (the batch order is unknowable)" : ""));
}

}  // namespace clairfs::fs
