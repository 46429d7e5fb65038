#include "tools/sim/simulate.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>

#include "tools/sim/clairfs_source.hpp"
#include "tools/sim/fanstore_source.hpp"
#include "tools/sim/job_order.hpp"
#include "tools/sim/nopfs_source.hpp"
#include "tools/sim/shared_fs_source.hpp"

namespace clairfs::sim {

std::vector<uint64_t> DatasetSizes(const SimConfig& config) {
  std::vector<uint64_t> sizes(config.files, config.file_size);
  if (config.file_size_stdev == 0) return sizes;
  std::mt19937_64 rng(config.dataset_seed);
  std::normal_distribution<double> size(static_cast<double>(config.file_size),
                                        static_cast<double>(config.file_size_stdev));
  for (uint64_t& s : sizes) s = static_cast<uint64_t>(std::max(1.0, std::round(size(rng))));
  return sizes;
}

Result<PolicyRun> RunPolicy(const SimConfig& config, const std::string& policy,
                            const std::vector<uint64_t>& file_bytes, const EpochFn& on_epoch) {
  auto order = MakeJobOrder(config);
  if (!order.ok()) return order.status();
  if (order->sampler->dataset_size() != file_bytes.size()) {
    return Status::InvalidArgument("the order is over " +
                                   std::to_string(order->sampler->dataset_size()) +
                                   " files, the dataset has " + std::to_string(file_bytes.size()));
  }
  const JobSpec& job = order->job;
  const prefetch::Sampler& sampler = *order->sampler;

  EventLoop loop;
  SharedDevice shared_fs(&loop, config.shared_fs);
  NodeCpus cpus(&loop, job.nodes, config.cores);
  std::unique_ptr<DataSource> source;
  FanStoreSource* fanstore = nullptr;
  ClairfsSource* clairfs = nullptr;
  if (policy == "shared-fs") {
    source = std::make_unique<SharedFsSource>(&loop, &shared_fs, &file_bytes, job.nodes,
                                              config.page_cache.value_or(config.ram),
                                              job.reads_per_file);
  } else if (policy == "fanstore") {
    auto f = std::make_unique<FanStoreSource>(&loop, &shared_fs, &file_bytes, job.nodes,
                                              config.partitions, config.node);
    fanstore = f.get();
    source = std::move(f);
  } else if (policy == "nopfs") {
    NopfsSpec spec{.ram_bytes = config.ram,
                   .ssd_bytes = config.ssd_capacity,
                   .node = config.node,
                   .prefetcher = config.nopfs_prefetcher,
                   .staging_bytes = config.nopfs_staging,
                   .prefetch_threads = config.nopfs_threads,
                   .sample_bytes = config.nopfs_sample_bytes};
    auto n = NopfsSource::Create(&loop, &shared_fs, &file_bytes, sampler, job, spec);
    if (!n.ok()) return n.status();
    source = std::move(n).value();
  } else if (policy == "clairfs") {
    ClairfsSpec spec{.partitions = config.partitions,
                     .placement = config.placement,
                     .homes_by_reader = config.homes_by_reader,
                     .replicas = config.replicas,
                     .ram_bytes = config.ram,
                     .fetch_slots = config.fetch_slots,
                     .stage_threads = config.stage_threads,
                     .stage_chunk = config.stage_chunk,
                     .stage_yield = config.stage_yield,
                     .stage_whole_chunks = config.stage_whole_chunks,
                     .stage_first_use = config.stage_first_use,
                     .node = config.node,
                     .cpus = &cpus,
                     .cpu_per_staged_byte = config.cpu_per_staged_byte,
                     .cpu_per_served_byte = config.cpu_per_served_byte,
                     .cpu_per_peer_byte = config.cpu_per_peer_byte,
                     .cpu_per_open = config.cpu_per_open};
    auto c = ClairfsSource::Create(&loop, &shared_fs, &file_bytes, sampler, job, spec);
    if (!c.ok()) return c.status();
    clairfs = c->get();
    source = std::move(c).value();
  } else {
    return Status::InvalidArgument("unknown policy '" + policy + "'");
  }
  auto epochs = RunJob(&loop, job, sampler, source.get(), on_epoch, &cpus);
  if (!epochs.ok()) return epochs.status();
  PolicyRun run;
  run.policy = policy;
  run.epochs = std::move(epochs).value();
  if (fanstore != nullptr) run.staging_seconds = fanstore->staging_seconds();
  if (clairfs != nullptr) run.staging_seconds = clairfs->staging_seconds();
  run.peak_shared_fs_requests = shared_fs.counters().peak_in_progress;
  run.shared_fs_bytes = shared_fs.counters().bytes;
  return run;
}

}  // namespace clairfs::sim
