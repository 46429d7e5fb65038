// Turns the daemon's prefetch settings and its in-RAM manifest into what the
// planner needs: the dataset listing under prefetch_root (from the manifest,
// no disk access), the job's ReadOrder, the node's local ranks and the
// PlannerConfig/PlannerInput (dataset index -> manifest node, sizes from the
// manifest).
//
// Errors: InvalidArgument naming the setting (unknown root, a version that
// does not parse, an empty dataset, none of the predicted files in the
// manifest, ...), or the ReadOrder's error. Free
// function; thread-safe. The result owns the ReadOrder the OrderSource uses:
// keep it alive as long as the planner.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/status.hpp"
#include "fs/config/config.hpp"
#include "partitioner/format/manifest.hpp"
#include "prefetch/options/read_order.hpp"
#include "prefetch/order/listing.hpp"
#include "prefetch/planner/first_readers.hpp"
#include "prefetch/planner/planner_config.hpp"

namespace clairfs::fs {

struct PrefetchJob {
  std::shared_ptr<const prefetch::ReadOrder> order;  // referenced by input.order
  prefetch::PlannerConfig config;
  prefetch::PlannerInput input;
  // By manifest node: 1 when the node is a file of the dataset (an index maps to it).
  std::vector<uint8_t> in_dataset;
  uint64_t node = 0;           // this daemon's node index (its MPI rank)
  bool shared_stream = false;  // config.local_ranks are readers of rank 0's order
  // Predicted files the manifest does not have (their opens cannot be prepared).
  uint64_t missing_files = 0;
  std::string first_missing;
};

// The sampler's settings of the config (prefetch_sampler, every
// prefetch_<name> setting, and the job's prefetch_world_size and
// prefetch_batch_size where the sampler takes them) set through the one table
// of sampler settings that clairfs-order's options also use
// (prefetch/options/sampler_settings.hpp), so the daemon and the tool accept
// exactly the same samplers and values. InvalidArgument listing every
// problem, in config keys.
Result<prefetch::OrderSpec> OrderSpecFromConfig(const Config& config);

// The files (and empty directories) under `root` of the manifest, relative to it.
Result<prefetch::Listing> ListingFromManifest(const format::Manifest& manifest, uint32_t root);

// The files (manifest nodes, in read order) the job's settings predict for
// `rank` in `epoch`: to check reported orders against. A single-stream
// sampler answers for every rank; a sampler whose epochs are sets of
// batches (no read order) answers Unsupported. Keeps the job's order alive.
std::function<Result<std::vector<uint32_t>>(uint64_t rank, uint64_t epoch)> PredictedFiles(
    const PrefetchJob& job);

// The training processes on each node: prefetch_ranks_per_node, or the
// world size spread over the nodes.
uint64_t RanksPerNode(const Config& config, uint64_t nodes);

// For each manifest node, the daemon (0 .. nodes-1) whose node's training
// processes open it first in the settings' first epoch (the earliest step of
// any of its ranks; a tie goes to the lower node), or -1: what
// PlaceByReader homes the partitions by; and that step, what staging
// follows. Unsupported for a shared stream or an epoch whose order is
// unknowable; the job's errors as they are.
Result<prefetch::FirstReads> FirstReaders(const Config& config, const format::Manifest& manifest,
                                          int nodes);

// `node` of `nodes` daemons. config.prefetch_sampler must not be "none".
Result<PrefetchJob> BuildPrefetchJob(const Config& config, const format::Manifest& manifest,
                                     uint64_t node, uint64_t nodes);
// The same over `listing`, the files under config.prefetch_root
// (ListingFromManifest), for a caller that builds several jobs over one root
// (DiagnoseSettings). `like`, if not null, is a job over the same root: when
// the new job's dataset names the same paths in the same order, its map to
// manifest nodes is taken instead of resolving every path again.
Result<PrefetchJob> BuildPrefetchJobOver(const Config& config, const format::Manifest& manifest,
                                         const prefetch::Listing& listing, uint64_t node,
                                         uint64_t nodes, const PrefetchJob* like = nullptr);

// Logs what the daemon predicts with `job`: the predicted files the dataset
// lacks and a node with none of the job's ranks (warnings), then the sampler,
// the node's ranks and the budget. `batch_mode`: the planner's (its epochs
// are sets of batches).
void LogPrefetchJob(const Config& config, const PrefetchJob& job, bool batch_mode);

}  // namespace clairfs::fs
