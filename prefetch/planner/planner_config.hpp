// PlannerConfig and PlannerInput: what the planner needs to know about a job.
//
// PlannerConfig holds the node's local ranks, the epochs, the DataLoader shape,
// the RAM budget and the tuning knobs (every field has a default and a
// comment). PlannerInput holds the data: where the per-epoch orders come from
// (an OrderSource, normally a Sampler's OrderRanks, or a BatchSource when the
// epochs are sets of batches in unknown order), the dataset index -> file
// id map and the size of every file id (a read-only table that many planners
// may share). Value types; thread-compatible. An OrderSource must be callable
// from any thread (Sampler::OrderRanks is).
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.hpp"
#include "prefetch/order/sampler.hpp"

namespace clairfs::prefetch {

// The daemon's manifest node index of a file.
using FileId = uint32_t;
inline constexpr FileId kNoFile = std::numeric_limits<FileId>::max();

// The dataset indices each of `ranks` reads in `epoch`, element i for
// ranks[i] (Sampler::OrderRanks's contract).
using OrderSource = std::function<Result<std::vector<std::vector<Index>>>(
    const std::vector<uint64_t>& ranks, uint64_t epoch)>;

// An OrderSource over `sampler`, which must outlive every use of the result.
OrderSource OrderSourceFromSampler(const Sampler& sampler);

// Epoch `epoch` of rank `rank` as a set of batches, or nullopt when its
// order is known (Sampler::Batches's contract).
using BatchSource = std::function<Result<std::optional<BatchEpoch>>(uint64_t rank, uint64_t epoch)>;

// A BatchSource over `sampler`, which must outlive every use of the result.
BatchSource BatchSourceFromSampler(const Sampler& sampler);

// Slurm's block distribution: node `node` holds ranks [node*G, (node+1)*G),
// clipped to world_size.
std::vector<uint64_t> BlockLocalRanks(uint64_t node, uint64_t ranks_per_node, uint64_t world_size);

inline constexpr uint64_t kAuto = std::numeric_limits<uint64_t>::max();

struct PlannerConfig {
  // False: no prediction (an order the daemon cannot reproduce). The planner
  // then only keeps the budget for a reactive cache: NextFetches is empty and
  // Admit/Evictions evict oldest-first. Default true.
  bool enabled = true;
  // The order each training process on this node follows, one entry per
  // process: a global rank id of the sampler (see BlockLocalRanks). A rank may
  // appear several times - a node-shared stream, where several local
  // processes read the same order (every Horovod rank iterating the whole
  // dataset, or ranks seeded alike): a file is then fetched once and kept
  // until the last of them has opened it. Their opens of one file may be seen
  // once (inotify merges identical events that arrive back to back), so an
  // entry a reader has passed whose file was just opened counts as opened.
  // At least one when enabled; the entries' order fixes the stream's slots.
  std::vector<uint64_t> local_ranks;
  uint64_t start_epoch = 0;  // first epoch the job runs (a resumed job starts later)
  uint64_t end_epoch = 1;    // one past the last epoch; > start_epoch when enabled
  // DataLoader shape (see loader_workers.hpp); defaults are DataLoader's.
  uint64_t batch_size = 1;
  uint64_t num_workers = 0;
  uint64_t prefetch_factor = 2;
  // Keras >= 3.3: the next open is among the next `read_window` unread files
  // of the base order (ReadOrder::window(); 8 x batch). 1 = exact order.
  uint64_t read_window = 1;
  // RAM the planner may fill: resident + in-flight bytes never exceed it.
  uint64_t budget_bytes = 0;
  // Consecutive opens not found in any local rank's window before a resync
  // is attempted (and then again every this many). Default 8.
  uint64_t deviation_threshold = 8;
  // Of those opens, how many must fall near one position of one epoch for a
  // resync to jump there. kAuto: 3/4 of deviation_threshold (at least 1).
  uint64_t resync_min_matches = kAuto;
  // Epochs beyond the materialised ones a resync attempt generates and
  // searches (round robin over [start_epoch, end_epoch)). Default 2.
  uint64_t resync_scan_epochs = 2;
  // Extra entries in the locate window beyond 2 x W x pf batches + window.
  // kAuto: one batch.
  uint64_t locate_slack = kAuto;
  // Files opened by the last this many opens are not evicted (their reads
  // follow the open). kAuto: 4 x ranks x max(1, workers). 0 disables.
  uint64_t pin_recent_opens = kAuto;
  // A file whose fetch failed this many times is not planned again until it
  // is opened. Default 3.
  uint64_t max_fetch_retries = 3;
};

struct PlannerInput {
  OrderSource order;  // required when enabled
  // Optional. When it gives the start epoch as a set of batches, the planner
  // runs in batch mode (docs/prefetch.md): every epoch must then come as
  // batches, and `order` is not used.
  BatchSource batches;
  // Optional: a guess at an epoch `order` does not know yet (Unavailable),
  // in the same form. Its files are fetched into room nothing known needs
  // (they are the first to go); the epoch is followed only once `order`
  // gives it.
  OrderSource guess;
  std::vector<FileId> file_of_index;  // dataset index -> file id (kNoFile: not served)
  // Bytes, by file id; null: no file ids. Never written after it is handed
  // over, so every planner of a process can hold the same table (the
  // simulator's thousands of nodes: 8 bytes x files once, not per node).
  std::shared_ptr<const std::vector<uint64_t>> file_size;

  // The file ids the size table covers.
  uint64_t files() const { return file_size ? file_size->size() : 0; }
};

// A size table of its own for `sizes`, for PlannerInput::file_size.
std::shared_ptr<const std::vector<uint64_t>> ShareSizes(std::vector<uint64_t> sizes);

// Values derived from a PlannerConfig once it is valid.
struct PlannerShape {
  uint32_t ranks = 0;           // G, the local ranks
  uint64_t loader_steps = 0;    // entries one rank's loader reads ahead: W x pf x batch
  uint64_t window_steps = 0;    // how far past a rank's head an open is looked for
  uint64_t lag_steps = 0;       // an unopened entry this far behind the head is abandoned
  uint64_t match_steps = 0;     // a resync's recent opens must lie this close together
  uint64_t min_lead_steps = 0;  // entries per rank kept materialised beyond the heads
  uint64_t pin_opens = 0;       // resolved pin_recent_opens
  uint64_t resync_matches = 0;  // resolved resync_min_matches
  uint64_t merge_window = 0;    // opens remembered for a shared stream (0: none)
};

// Checks `config` against `input` and derives the shape. InvalidArgument
// naming the first bad field. A disabled config needs only the sizes.
Result<PlannerShape> ValidatePlannerConfig(const PlannerConfig& config, const PlannerInput& input);

// The files the node's loaders may have opened or be opening ahead of the
// batch each rank consumes: per local rank, W x prefetch_factor batches in
// flight and the one being consumed (one batch without workers).
uint64_t LoadersReadAhead(const PlannerConfig& config);
// A warning for the log when the budget holds fewer than twice the loaders'
// read-ahead in files of `mean_file_bytes`: files then wait whatever the
// order (room comes free only as the opens, seen late, are counted); else
// nullopt.
std::optional<std::string> ReadAheadWarning(const PlannerConfig& config, uint64_t mean_file_bytes);

}  // namespace clairfs::prefetch
