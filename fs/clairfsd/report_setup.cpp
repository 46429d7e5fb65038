#include "fs/clairfsd/report_setup.hpp"

#include <algorithm>
#include <charconv>
#include <limits>
#include <numeric>
#include <string>
#include <utility>

#include "base/clock.hpp"
#include "base/log.hpp"
#include "fs/clairfsd/prefetch_setup.hpp"
#include "prefetch/options/sampler_settings.hpp"
#include "prefetch/planner/planner.hpp"

namespace clairfs::fs {
namespace {

namespace pf = clairfs::prefetch;

// The loader's shape when the reporter did not send it (LOADER): a
// DataLoader this wide keeps kWorkers x 2 batches of kBatch in flight, so
// opens may come that far out of order.
constexpr uint64_t kBatch = 32;
constexpr uint64_t kWorkers = 4;
// Epochs are segments as they are reported: no end is known.
constexpr uint64_t kEpochs = uint64_t{1} << 32;

// Sizes by manifest node (0 for directories).
std::vector<uint64_t> FileSizes(const format::Manifest& m) {
  std::vector<uint64_t> sizes(m.node_count(), 0);
  for (uint32_t n = 0; n < m.node_count(); ++n) {
    if (!m.IsDirectory(n)) sizes[n] = m.node(n).size;
  }
  return sizes;
}

// The planner's order source over segments of the processes `pids` (slot g
// is pids[g]): `get` is ReportedOrders::Segment, or Guess for the guesses.
pf::OrderSource SlotOrders(const ReportedOrders* orders, std::vector<uint64_t> pids,
                           Result<ReportedSegment> (ReportedOrders::*get)(uint64_t, uint64_t)
                               const) {
  return [orders, pids = std::move(pids), get](
             const std::vector<uint64_t>& slots,
             uint64_t epoch) -> Result<std::vector<std::vector<pf::Index>>> {
    std::vector<std::vector<pf::Index>> out;
    out.reserve(slots.size());
    for (uint64_t g : slots) {
      Result<ReportedSegment> seg = (orders->*get)(pids[g], epoch);
      if (!seg.ok()) return seg.status();
      out.emplace_back(seg->files.begin(), seg->files.end());
    }
    return out;
  };
}

}  // namespace

Result<ReportedModel> ModelOfSettings(const format::Manifest& manifest,
                                      const std::map<std::string, std::string>& settings) {
  Config c;
  uint64_t rank = 0, world = 1;
  bool has_sampler = false;
  std::vector<std::string> errors;
  for (const auto& [key, value] : settings) {
    if (key == "sampler") {
      c.prefetch_sampler = value;
      has_sampler = true;
    } else if (key == "root") {
      c.prefetch_root = value;
    } else if (key == "rank" || key == "world_size") {
      uint64_t& n = key == "rank" ? rank : world;
      const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (ec != std::errc() || end != value.data() + value.size() || value.empty()) {
        errors.push_back(key + ": '" + value + "' is not a number");
      }
    } else {
      // The sampler's settings as clairfs.yaml gives them: the table's
      // names, dashes as underscores; a switch is sent only when on.
      std::string name = key;
      for (char& ch : name) {
        if (ch == '_') ch = '-';
      }
      const prefetch::SamplerSetting* row = prefetch::FindSamplerSetting(name);
      if (row == nullptr || name == "order-file") {
        errors.push_back(key + ": not a sampler setting");
        continue;
      }
      std::string k = key;
      for (char& ch : k) {
        if (ch == '-') ch = '_';
      }
      c.prefetch_settings.emplace_back(k, row->is_switch ? "true" : value);
    }
  }
  if (!has_sampler) errors.push_back("sampler: missing");
  // EPOCH k is the loader's k-th iteration (docs/report.md): for the tf.data
  // models that is the `loop` driver, whatever iterates it (fit's iterators
  // that are never read are not reported).
  if ((c.prefetch_sampler == "keras" || c.prefetch_sampler == "tf-list-files") &&
      settings.count("driver") == 0) {
    c.prefetch_settings.emplace_back("driver", "loop");
  }
  if (world == 0 || rank >= world) {
    errors.push_back("rank " + std::to_string(rank) + " of world_size " + std::to_string(world));
  }
  if (!errors.empty()) {
    std::string msg;
    for (const std::string& e : errors) msg += (msg.empty() ? "" : "; ") + e;
    return Status::InvalidArgument(msg);
  }
  c.prefetch_world_size = world;
  auto job = BuildPrefetchJob(c, manifest, 0, 1);
  if (!job.ok()) return job.status();
  ReportedModel model;
  model.window = job->order->window();
  for (const std::string& p : job->order->dataset().paths) model.memory_bytes += p.size() + 40;
  model.memory_bytes += job->input.file_of_index.size() * 4 + job->in_dataset.size();
  model.files = [predict = PredictedFiles(*job), rank](uint64_t epoch) {
    return predict(rank, epoch);
  };
  return model;
}

EngineSlot::EngineSlot(std::unique_ptr<PrefetchEngine> engine, Factory make)
    : engine_(std::move(engine)), make_(std::move(make)) {
  live_.store(engine_.get(), std::memory_order_release);
}

void EngineSlot::Start() {
  started_.store(true);
  if (engine_) engine_->Start();
}

PrefetchEngine* EngineSlot::GetOrMake() {
  if (!engine_) {
    engine_ = make_();
    if (started_.load()) engine_->Start();
    live_.store(engine_.get(), std::memory_order_release);
  }
  return engine_.get();
}

void EngineSlot::Reset() {
  live_.store(nullptr, std::memory_order_release);
  engine_.reset();
}

void EngineSlot::OnOpen(uint32_t node) {
  if (PrefetchEngine* e = get()) e->OnOpen(node);
}

void EngineSlot::OnListed(uint32_t first, uint32_t end) {
  if (PrefetchEngine* e = get()) e->OnListed(first, end);
}

void EngineSlot::OnReadWait(uint32_t node, uint64_t ns) {
  if (PrefetchEngine* e = get()) e->OnReadWait(node, ns);
}

void EngineSlot::OnForget(uint32_t node) {
  if (PrefetchEngine* e = get()) e->OnForget(node);
}

void EngineSlot::OnOpenEvent(uint32_t node) {
  if (PrefetchEngine* e = get()) e->OnOpenEvent(node);
}

ReportedPrefetch::ReportedPrefetch(const ReportedOrders* orders, EngineSlot* engine,
                                   std::shared_ptr<const format::Manifest> manifest,
                                   uint64_t budget)
    : orders_(orders), engine_(engine), manifest_(std::move(manifest)), budget_(budget) {}

std::unique_ptr<pf::Planner> ReportedPrefetch::Reactive(const format::Manifest& manifest,
                                                        uint64_t budget) {
  pf::PlannerConfig c;
  c.enabled = false;
  c.budget_bytes = budget;
  pf::PlannerInput in;
  in.file_size = pf::ShareSizes(FileSizes(manifest));
  // A disabled planner needs only the sizes; it cannot fail on them.
  return std::move(pf::Planner::Create(c, std::move(in), SteadyClock::Instance()).value());
}

std::vector<uint8_t> ReportedPrefetch::AllFiles(const format::Manifest& manifest) {
  std::vector<uint8_t> files(manifest.node_count(), 0);
  for (uint32_t n = 0; n < manifest.node_count(); ++n) files[n] = manifest.IsDirectory(n) ? 0 : 1;
  return files;
}

void ReportedPrefetch::CheckAgainst(Prediction predict, uint64_t start_epoch,
                                    std::vector<uint8_t> files) {
  MutexLock lock(&mu_);
  predict_ = std::move(predict);
  predict_start_ = start_epoch;
  predict_files_ = std::move(files);
}

std::string ReportedPrefetch::settings_check() const {
  MutexLock lock(&mu_);
  return check_;
}

void ReportedPrefetch::Check(const std::vector<uint64_t>& pids) {
  if (!predict_ || (!check_.empty() && check_ != "agree")) return;  // said once
  for (uint64_t pid : pids) {
    const uint64_t count = orders_->SegmentCount(pid);
    auto seg = orders_->Segment(pid, count - 1);
    auto info = orders_->Info(pid);
    if (!seg.ok() || seg->files.empty()) continue;
    // Another loader (a validation pass over other files) is not the one the
    // settings describe.
    bool ours = true;
    for (uint32_t f : seg->files) ours &= f < predict_files_.size() && predict_files_[f] != 0;
    if (!ours) continue;
    const uint64_t rank = info && info->rank >= 0 ? static_cast<uint64_t>(info->rank) : 0;
    auto want = predict_(rank, predict_start_ + seg->epoch);
    if (!want.ok()) continue;
    const std::string where =
        "rank " + std::to_string(rank) + " epoch " + std::to_string(seg->epoch);
    if (want->size() != seg->files.size()) {
      check_ = where + " reported " + std::to_string(seg->files.size()) +
               " files where the settings predict " + std::to_string(want->size()) +
               "; prefetch_world_size, prefetch_ranks_per_node or drop_last differs";
    } else {
      size_t at = 0;
      while (at < want->size() && (*want)[at] == seg->files[at]) ++at;
      if (at == want->size()) {
        check_ = "agree";
        continue;
      }
      check_ = where + " reported " + manifest_->Path(seg->files[at]) + " at position " +
               std::to_string(at) + " where the settings predict " + manifest_->Path((*want)[at]) +
               "; the same number of files: prefetch_seed (or the shuffle) differs";
    }
    Log(LogLevel::kWarn, "prefetch: the job's reported order differs from the settings' (" +
                             check_ + "); following the report");
    return;
  }
}

void ReportedPrefetch::OnFirstReads(FirstReadsFn f) {
  MutexLock lock(&mu_);
  first_reads_ = std::move(f);
}

void ReportedPrefetch::ShareFirstReads(const std::vector<uint64_t>& pids) {
  if (!first_reads_) return;
  for (uint64_t pid : pids) {
    if (!first_read_.insert(pid).second) continue;
    auto seg = orders_->Segment(pid, 0);
    if (!seg.ok()) continue;  // dropped already: the job is past its first epoch
    std::vector<FileStep> files;
    files.reserve(seg->files.size());
    for (size_t i = 0; i < seg->files.size(); ++i) files.push_back({seg->files[i], i});
    first_reads_(files);
  }
}

void ReportedPrefetch::OnSegment() {
  MutexLock lock(&mu_);
  std::vector<uint64_t> pids = orders_->Processes();
  if (pids.empty()) return;
  Check(pids);
  ShareFirstReads(pids);
  // No waiting for the node's other processes: a local_size (from the
  // launcher's environment) may count ranks that read through another
  // daemon of this host. Each one that reports later makes a new planner.
  // Slots by local rank where known, else in order of first report.
  std::stable_sort(pids.begin(), pids.end(), [&](uint64_t a, uint64_t b) {
    auto ia = orders_->Info(a), ib = orders_->Info(b);
    const int64_t la = ia ? ia->local_rank : -1, lb = ib ? ib->local_rank : -1;
    if (la < 0 || lb < 0) return false;
    return la < lb;
  });
  if (pids == pids_) {
    // The running planner's processes: its next epoch may be here.
    PrefetchEngine* engine = engine_->GetOrMake();
    engine->planner()->Maintain();
    engine->Wake();
    return;
  }
  // The processes of a job run the same loops, so their k-th segments are
  // the same loader epoch: the planner's epoch k. It starts at the latest
  // segment any of them began (the others' come in a moment). One that names
  // fewer files than it has indices still unlearned (a Dataset whose files
  // are learned from its opens, in the epoch that learns them) is not worth a
  // planner: what it learns in that epoch are files already opened, and its
  // other opens would be taken for the next epoch's. The next one will be.
  uint64_t start = 0;
  for (uint64_t pid : pids) start = std::max(start, orders_->SegmentCount(pid) - 1);
  uint64_t files = 0, unlearned = 0;
  // The widest loader reported sets how far out of order opens may come.
  uint64_t batch = 0, workers = 0, factor = 0, window = 1;
  for (uint64_t pid : pids) {
    auto seg = orders_->Segment(pid, start);
    if (!seg.ok()) continue;
    files += seg->files.size();
    unlearned += seg->unlearned;
    window = std::max(window, seg->read_window);
    if (seg->batch_size < 1 || seg->num_workers < 0) continue;
    const uint64_t b = static_cast<uint64_t>(seg->batch_size);
    const uint64_t w = static_cast<uint64_t>(seg->num_workers);
    const uint64_t f = static_cast<uint64_t>(std::max<int64_t>(1, seg->prefetch_factor));
    if (b * std::max<uint64_t>(1, w) * f > batch * std::max<uint64_t>(1, workers) * factor) {
      batch = b, workers = w, factor = f;
    }
  }
  if (files == 0 || unlearned > files) return;
  if (batch == 0) batch = kBatch, workers = kWorkers, factor = 2;
  pf::PlannerConfig c;
  c.local_ranks.resize(pids.size());
  std::iota(c.local_ranks.begin(), c.local_ranks.end(), 0);
  c.start_epoch = start;
  c.end_epoch = start + kEpochs;
  c.batch_size = batch;
  c.num_workers = workers;
  c.prefetch_factor = factor;
  c.read_window = window;
  c.budget_bytes = budget_;
  pf::PlannerInput in;
  in.file_size = pf::ShareSizes(FileSizes(*manifest_));
  // Segments are reported as manifest nodes: index = file id.
  in.file_of_index.resize(manifest_->node_count());
  std::iota(in.file_of_index.begin(), in.file_of_index.end(), pf::FileId{0});
  in.order = SlotOrders(orders_, pids, &ReportedOrders::Segment);
  in.guess = SlotOrders(orders_, pids, &ReportedOrders::Guess);
  auto planner = pf::Planner::Create(std::move(c), std::move(in), SteadyClock::Instance());
  if (!planner.ok()) {
    Log(LogLevel::kWarn,
        "prefetch: the reported orders cannot be followed: " + planner.status().ToString());
    return;
  }
  std::string who;
  for (uint64_t pid : pids) who += (who.empty() ? "" : ", ") + std::to_string(pid);
  Log(LogLevel::kInfo, "prefetch: following the orders reported by " + std::to_string(pids.size()) +
                           " process(es) [pid " + who + "], budget " + std::to_string(budget_) +
                           " bytes");
  // The epochs as the job counts them: the loader of the first slot's
  // segment, and its own epoch count.
  engine_->GetOrMake()->Replace(std::move(*planner), "reported",
                                [orders = orders_, pid = pids.front()](uint64_t epoch) {
                                  return orders->SegmentLoader(pid, epoch);
                                });
  pids_ = std::move(pids);
}

}  // namespace clairfs::fs
