#include "fs/clairfsd/prefetch_setup.hpp"

#include <cctype>
#include <string>

#include "prefetch/options/order_flags.hpp"

namespace clairfs::fs {
namespace {

namespace pf = clairfs::prefetch;

// "--keras-version" -> "prefetch_keras_version"; "--no-shuffle" -> "prefetch_shuffle".
std::string KeyOf(std::string flag) {
  flag = flag.substr(2);
  if (flag.rfind("no-", 0) == 0 && pf::IsSamplerSwitch("--" + flag)) flag = flag.substr(3);
  for (char& ch : flag) {
    if (ch == '-') ch = '_';
  }
  return "prefetch_" + flag;
}

// The parser speaks of flags; the daemon's user wrote config keys.
std::string InKeys(const std::string& message) {
  std::string out;
  for (size_t i = 0; i < message.size();) {
    if (message.compare(i, 2, "--") == 0 && i + 2 < message.size() &&
        std::isalpha(static_cast<unsigned char>(message[i + 2]))) {
      size_t end = i + 2;
      while (end < message.size() &&
             (std::isalnum(static_cast<unsigned char>(message[end])) || message[end] == '-')) {
        ++end;
      }
      out += KeyOf(message.substr(i, end - i));
      i = end;
    } else {
      out += message[i++];
    }
  }
  return out;
}

bool ParseSwitch(const std::string& v, bool* on) {
  if (v == "true" || v == "yes" || v == "on" || v == "1") return (*on = true);
  if (v == "false" || v == "no" || v == "off" || v == "0") return !(*on = false);
  return false;
}

}  // namespace

Result<pf::OrderSpec> OrderSpecFromConfig(const Config& c) {
  std::vector<std::string> args = {"--sampler", c.prefetch_sampler};
  std::vector<std::string> errors;
  bool world_given = false, batch_given = false;
  for (const auto& [name, value] : c.prefetch_settings) {
    std::string flag = "--" + name;
    for (char& ch : flag) {
      if (ch == '_') ch = '-';
    }
    world_given |= flag == "--world-size";
    batch_given |= flag == "--batch-size";
    const std::string negated = "--no-" + flag.substr(2);
    if (pf::IsSamplerSwitch(flag) || pf::IsSamplerSwitch(negated)) {
      bool on = false;
      if (!ParseSwitch(value, &on)) {
        errors.push_back("prefetch_" + name + ": '" + value + "' is not true or false");
      } else if (pf::IsSamplerSwitch(flag) && on) {
        args.push_back(flag);
      } else if (!pf::IsSamplerSwitch(flag) && !on) {
        args.push_back(negated);
      }
    } else if (pf::IsSamplerValued(flag) && flag != "--sampler") {
      args.push_back(flag);
      args.push_back(value);
    } else {
      errors.push_back("prefetch_" + name + ": unknown key");
    }
  }
  // Keys the planner needs too: the job's training processes are the
  // DistributedSampler's replicas; a Keras or tf.data batch shapes its order.
  auto kind = pf::ParseSamplerKind(c.prefetch_sampler);
  if (kind.ok() && *kind == pf::SamplerKind::kTorchDistributed && !world_given) {
    args.insert(args.end(), {"--world-size", std::to_string(c.prefetch_world_size)});
  }
  if (kind.ok() && !batch_given &&
      (*kind == pf::SamplerKind::kKeras || *kind == pf::SamplerKind::kKerasFlow ||
       *kind == pf::SamplerKind::kTfListFiles)) {
    args.insert(args.end(), {"--batch-size", std::to_string(c.prefetch_batch_size)});
  }
  auto flags = pf::ParseFlags(args, pf::FlagsFor::kDaemon);
  if (!flags.ok()) errors.push_back(InKeys(flags.status().message()));
  if (!errors.empty()) {
    std::string msg;
    for (const std::string& e : errors) msg += (msg.empty() ? "" : "\n") + e;
    return Status::InvalidArgument(msg);
  }
  return flags->spec;
}

namespace {
}  // namespace

Result<prefetch::Listing> ListingFromManifest(const format::Manifest& manifest, uint32_t root) {
  prefetch::Listing listing;
  // Depth-first over the manifest's directories; the walk order is the
  // Listing's business, so any order will do here.
  std::vector<std::pair<uint32_t, std::string>> todo{{root, ""}};
  while (!todo.empty()) {
    auto [dir, prefix] = std::move(todo.back());
    todo.pop_back();
    const uint32_t first = manifest.FirstChild(dir);
    const uint32_t count = manifest.ChildCount(dir);
    if (count == 0 && dir != root) {
      listing.directories.push_back(prefix.substr(0, prefix.size() - 1));
    }
    for (uint32_t i = first; i < first + count; ++i) {
      std::string path = prefix + std::string(manifest.name(i));
      if (manifest.IsDirectory(i)) {
        todo.emplace_back(i, path + "/");
      } else {
        listing.files.push_back(std::move(path));
      }
    }
  }
  return listing;
}

Result<PrefetchJob> BuildPrefetchJob(const Config& config, const format::Manifest& manifest,
                                     uint64_t node, uint64_t nodes) {
  auto spec = OrderSpecFromConfig(config);
  if (!spec.ok()) return spec.status();
  auto root = manifest.Resolve(config.prefetch_root);
  if (!root.ok() || !manifest.IsDirectory(*root)) {
    return Status::InvalidArgument("prefetch_root: '" + config.prefetch_root +
                                   "' is not a directory of the dataset");
  }
  auto listing = ListingFromManifest(manifest, *root);
  if (!listing.ok()) return listing.status();
  auto order = pf::ReadOrder::Build(*spec, &*listing);
  if (!order.ok()) return order.status();

  PrefetchJob job;
  job.node = node;
  job.order = std::make_shared<const pf::ReadOrder>(std::move(*order));
  const pf::DatasetIndex& dataset = job.order->dataset();
  if (!job.order->has_paths()) {
    return Status::InvalidArgument("prefetch_order_file: an index order file needs the listing");
  }
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
  if (dataset.size() > 0 && job.missing_files == dataset.size()) {
    return Status::InvalidArgument("none of the " + std::to_string(dataset.size()) +
                                   " files the settings predict is in the dataset (first: " +
                                   job.first_missing + ")");
  }
  job.input.file_size.resize(manifest.node_count());
  for (uint32_t n = 0; n < manifest.node_count(); ++n) {
    job.input.file_size[n] = manifest.IsDirectory(n) ? 0 : manifest.node(n).size;
  }
  job.input.order = pf::OrderSourceFromSampler(job.order->sampler());
  // Samplers whose batch order is unknowable put the planner in batch mode.
  job.input.batches = pf::BatchSourceFromSampler(job.order->sampler());

  pf::PlannerConfig& pc = job.config;
  const uint64_t world = config.prefetch_world_size;
  uint64_t per_node = config.prefetch_ranks_per_node;
  if (per_node == 0) per_node = std::max<uint64_t>(1, world / std::max<uint64_t>(1, nodes));
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

}  // namespace clairfs::fs
