#include "prefetch/planner/planner_config.hpp"

#include <algorithm>
#include <string>
#include <utility>

namespace clairfs::prefetch {

OrderSource OrderSourceFromSampler(const Sampler& sampler) {
  const Sampler* s = &sampler;
  return [s](const std::vector<uint64_t>& ranks, uint64_t epoch) {
    return s->OrderRanks(ranks, epoch);
  };
}

BatchSource BatchSourceFromSampler(const Sampler& sampler) {
  const Sampler* s = &sampler;
  return [s](uint64_t rank, uint64_t epoch) { return s->Batches(rank, epoch); };
}

std::shared_ptr<const std::vector<uint64_t>> ShareSizes(std::vector<uint64_t> sizes) {
  return std::make_shared<const std::vector<uint64_t>>(std::move(sizes));
}

std::vector<uint64_t> BlockLocalRanks(uint64_t node, uint64_t ranks_per_node, uint64_t world_size) {
  std::vector<uint64_t> out;
  for (uint64_t r = node * ranks_per_node; r < (node + 1) * ranks_per_node && r < world_size; ++r) {
    out.push_back(r);
  }
  return out;
}

Result<PlannerShape> ValidatePlannerConfig(const PlannerConfig& c, const PlannerInput& in) {
  if (in.files() >= kNoFile) {
    return Status::InvalidArgument("planner: more file ids than FileId can hold");
  }
  PlannerShape shape;
  if (!c.enabled) return shape;
  if (c.local_ranks.empty()) return Status::InvalidArgument("planner: no local ranks");
  if (c.local_ranks.size() > 4096) return Status::InvalidArgument("planner: too many local ranks");
  if (c.end_epoch <= c.start_epoch) {
    return Status::InvalidArgument("planner: end_epoch " + std::to_string(c.end_epoch) +
                                   " is not after start_epoch " + std::to_string(c.start_epoch));
  }
  if (c.batch_size == 0) return Status::InvalidArgument("planner: batch_size is 0");
  if (c.read_window == 0) return Status::InvalidArgument("planner: read_window is 0");
  if (c.deviation_threshold == 0)
    return Status::InvalidArgument("planner: deviation_threshold is 0");
  if (!in.order) return Status::InvalidArgument("planner: no order source");
  for (FileId f : in.file_of_index) {
    if (f != kNoFile && f >= in.files()) {
      return Status::InvalidArgument("planner: dataset index maps to file id " + std::to_string(f) +
                                     " beyond the size table");
    }
  }
  shape.ranks = static_cast<uint32_t>(c.local_ranks.size());
  // W = 0 loads in the main process: one batch at a time.
  uint64_t batches = std::max<uint64_t>(1, c.num_workers * c.prefetch_factor);
  shape.loader_steps = batches * c.batch_size;
  uint64_t slack = c.locate_slack == kAuto ? c.batch_size : c.locate_slack;
  shape.window_steps = 2 * shape.loader_steps + c.read_window + slack;
  // The loader's out-of-order reads stay within its window; a Keras window
  // can leave a file unread for a geometric number of steps (probability
  // (1 - 1/W)^d), so abandon only after 16 windows (e^-16).
  shape.lag_steps = shape.window_steps + (c.read_window > 1 ? 16 * c.read_window : 0);
  // The last deviation_threshold opens of ranks that move together span
  // about that many steps plus the loader's reordering; a tight span keeps
  // chance matches (a different seed) rare.
  shape.match_steps = shape.loader_steps + c.read_window + c.deviation_threshold;
  shape.min_lead_steps = shape.window_steps + shape.loader_steps;
  std::vector<uint64_t> sorted = c.local_ranks;
  std::sort(sorted.begin(), sorted.end());
  const bool shared = std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end();
  // Several readers of one order: how far back an open of a file by one of
  // them is remembered, so that another's entry for it, passed unseen, counts
  // as opened - up to a loader window (and a batch) behind, twice over for
  // the reordering of both loaders.
  shape.merge_window = shared ? 2 * shape.ranks * (shape.loader_steps + c.batch_size) : 0;
  shape.pin_opens = c.pin_recent_opens == kAuto
                        ? 4 * shape.ranks * std::max<uint64_t>(1, c.num_workers)
                        : c.pin_recent_opens;
  shape.resync_matches = c.resync_min_matches == kAuto
                             ? std::max<uint64_t>(1, c.deviation_threshold * 3 / 4)
                             : std::clamp<uint64_t>(c.resync_min_matches, 1, c.deviation_threshold);
  return shape;
}

uint64_t LoadersReadAhead(const PlannerConfig& c) {
  const uint64_t batches = std::max<uint64_t>(1, c.num_workers * c.prefetch_factor) + 1;
  return c.local_ranks.size() * batches * c.batch_size;
}

std::optional<std::string> ReadAheadWarning(const PlannerConfig& c, uint64_t mean_file_bytes) {
  const uint64_t ahead = LoadersReadAhead(c);
  if (!c.enabled || mean_file_bytes == 0 || ahead == 0) return std::nullopt;
  const uint64_t holds = c.budget_bytes / mean_file_bytes;
  if (holds >= 2 * ahead) return std::nullopt;
  return "ram_cache (" + std::to_string(c.budget_bytes) + " bytes) holds about " +
         std::to_string(holds) + " files of " + std::to_string(mean_file_bytes) +
         " bytes, while the node's loaders (" + std::to_string(c.local_ranks.size()) +
         " rank(s), batch " + std::to_string(c.batch_size) + ", " + std::to_string(c.num_workers) +
         " workers, prefetch_factor " + std::to_string(c.prefetch_factor) + ") read up to " +
         std::to_string(ahead) + " ahead: files will wait for room; give ram_cache at least " +
         std::to_string(2 * ahead * mean_file_bytes) + " bytes";
}

}  // namespace clairfs::prefetch
