// The prefetcher's counters: their snapshot, and the "prefetch" section of
// stats.json written from it (documented in docs/fuse.md).
#include <algorithm>

#include "fs/engine/prefetch_engine.hpp"

namespace clairfs::fs {
namespace {

uint64_t Get(const std::atomic<uint64_t>& a) { return a.load(std::memory_order_relaxed); }

}  // namespace

void PrefetchEngine::AddOpenCounts(const prefetch::PlannerStats& from, prefetch::PlannerStats* to) {
  // `from`'s opens came first (a replaced planner's): its first deviation is
  // the first, and `to`'s opens are numbered after `from`'s.
  if (from.first_deviation.open != 0) {
    to->first_deviation = from.first_deviation;
  } else if (to->first_deviation.open != 0) {
    to->first_deviation.open += from.opens;
  }
  to->opens += from.opens;
  to->predicted_opens += from.predicted_opens;
  to->ready_opens += from.ready_opens;
  to->stalled_opens += from.stalled_opens;
  to->stall_ns += from.stall_ns;
  to->max_stall_ns = std::max(to->max_stall_ns, from.max_stall_ns);
  to->read_stalls += from.read_stalls;
  to->read_stall_ns += from.read_stall_ns;
  to->deviations += from.deviations;
  to->repeat_opens += from.repeat_opens;
  to->unreported_opens += from.unreported_opens;
  to->late_opens += from.late_opens;
  to->guessed_fetches += from.guessed_fetches;
  to->guessed_used += from.guessed_used;
  to->admissions += from.admissions;
  to->evictions += from.evictions;
}

std::string PrefetchEngine::DescribeDeviation(const prefetch::Deviation& d) const {
  if (d.open == 0) return "";
  auto path = [&](uint32_t node) {
    return node < manifest_->node_count() ? manifest_->Path(node) : std::string("?");
  };
  std::string out = "open " + std::to_string(d.open) + ": " + path(d.file) + " in epoch " +
                    std::to_string(d.epoch) + "; the order expected " +
                    (d.expected == prefetch::kNoFile ? std::string("nothing") : path(d.expected)) +
                    " next; ";
  out += d.next_epoch == UINT64_MAX
             ? std::string("the file is in no epoch known then")
             : "the file's next entry is in epoch " + std::to_string(d.next_epoch);
  return out;
}

PrefetchStats PrefetchEngine::Snapshot() const {
  PrefetchStats s;
  prefetch::PlannerStats retired;
  std::shared_ptr<prefetch::Planner> planner;
  {
    MutexLock lock(&planner_mu_);
    planner = planner_;
    retired = retired_;
  }
  s.planner = planner->Stats();
  AddOpenCounts(retired, &s.planner);
  const Counters& c = counters_;
  s.ready_in_page_cache = Get(c.ready_in_page_cache);
  s.ready_in_ram = Get(c.ready_in_ram);
  s.waits = Get(c.waits);
  s.wait_ns = Get(c.wait_ns);
  s.wait_timeouts = Get(c.wait_timeouts);
  s.fetched = Get(c.fetched);
  s.fetched_bytes = Get(c.fetched_bytes);
  s.fetch_failures = Get(c.fetch_failures);
  s.not_kept = Get(c.not_kept);
  s.pushes = Get(c.pushes);
  s.pushed_bytes = Get(c.pushed_bytes);
  s.push_unknown_inode = Get(c.push_unknown_inode);
  s.push_errors = Get(c.push_errors);
  s.listed_pushes = Get(c.listed_pushes);
  s.late_pushes = Get(c.late_pushes);
  s.reloaded = Get(c.reloaded);
  s.forgotten = Get(c.forgotten);
  {
    MutexLock lock(&mu_);
    s.held_files = held_files_;
    s.held_bytes = held_bytes_;
  }
  return s;
}

void PrefetchEngine::WriteStats(clairfs::JsonWriter& w) const {
  const PrefetchStats s = Snapshot();
  const prefetch::PlannerStats& p = s.planner;
  std::shared_ptr<prefetch::Planner> planner;
  std::string sampler;
  std::string likely_wrong;
  uint64_t replacements = 0;
  LoaderOf loader_of;
  {
    MutexLock lock(&planner_mu_);
    planner = planner_;
    sampler = sampler_;
    likely_wrong = likely_wrong_;
    replacements = replacements_;
    loader_of = loader_of_;
  }
  w.String("sampler", sampler).Bool("enabled", p.enabled).Bool("lost", p.lost);
  w.String("likely_wrong", likely_wrong);
  if (!options_.reason.empty()) w.String("reason", options_.reason);
  w.Integer("planners_replaced", replacements);
  const prefetch::PlannerConfig& job = planner->config();
  w.BeginObject("job")
      .Integer("start_epoch", job.start_epoch)
      .Integer("end_epoch", job.end_epoch)
      .Integer("batch_size", job.batch_size)
      .Integer("num_workers", job.num_workers)
      .Integer("prefetch_factor", job.prefetch_factor)
      .Integer("read_window", job.read_window)
      .Integer("fetch_threads", options_.threads)
      .Integer("open_wait_ms", static_cast<uint64_t>(options_.open_wait.count()))
      .EndObject();
  w.BeginArray("ranks");
  for (const prefetch::RankPosition& r : planner->Positions()) {
    w.BeginObject()
        .Integer("rank", r.rank)
        .Integer("epoch", r.epoch)
        .Integer("offset", r.offset)
        .EndObject();
  }
  w.EndArray();
  w.Integer("opens", p.opens).Integer("predicted", p.predicted_opens);
  w.Integer("ready", p.ready_opens);
  w.BeginObject("open_hits")
      .Integer("page_cache", s.ready_in_page_cache)
      .Integer("ram", s.ready_in_ram)
      .EndObject();
  w.Integer("stalls", p.stalled_opens)
      .Integer("stall_ns", p.stall_ns)
      .Integer("max_stall_ns", p.max_stall_ns)
      .Integer("read_stalls", p.read_stalls)
      .Integer("read_stall_ns", p.read_stall_ns)
      .Integer("waits", s.waits)
      .Integer("wait_ns", s.wait_ns)
      .Integer("wait_timeouts", s.wait_timeouts)
      .Integer("lead_files", p.lead_files)
      .Integer("lead_bytes", p.lead_bytes)
      .Integer("lead_steps", p.lead_steps)
      .Integer("epoch", p.epoch)
      .Integer("deviations", p.deviations)
      .String("first_deviation", DescribeDeviation(p.first_deviation))
      .Integer("repeat_opens", p.repeat_opens)
      .Integer("unreported_opens", p.unreported_opens)
      .Integer("late_opens", p.late_opens)
      .Integer("guessed_fetches", p.guessed_fetches)
      .Integer("guessed_used", p.guessed_used)
      .Integer("resync_attempts", p.resync_attempts)
      .Integer("resyncs", p.resyncs)
      .Integer("budget_bytes", p.budget_bytes)
      .Integer("used_bytes", p.resident_bytes + p.in_flight_bytes)
      .Integer("peak_used_bytes", p.peak_used_bytes)
      .Integer("resident_files", p.resident_files)
      .Integer("fetched", s.fetched)
      .Integer("fetched_bytes", s.fetched_bytes)
      .Integer("fetch_failures", s.fetch_failures)
      .Integer("not_kept", s.not_kept)
      .Integer("admitted", p.admissions)
      .Integer("evictions", p.evictions)
      .Integer("short_budget_stops", p.short_budget_stops)
      .Integer("order_errors", p.order_errors)
      .Bool("batch_mode", p.batch_mode);
  w.BeginObject("batches")
      .Integer("pinned", p.batches_pinned)
      .Integer("ready_at_pin", p.batches_ready)
      .EndObject();
  w.BeginObject("page_cache")
      .Integer("pushes", s.pushes)
      .Integer("bytes", s.pushed_bytes)
      .Integer("unknown_inode", s.push_unknown_inode)
      .Integer("listed_pushes", s.listed_pushes)
      .Integer("late_pushes", s.late_pushes)
      .Integer("errors", s.push_errors)
      .Integer("held_files", s.held_files)
      .Integer("held_bytes", s.held_bytes)
      .Integer("reloaded", s.reloaded)
      .Integer("forgotten", s.forgotten)
      .EndObject();
  w.BeginArray("per_epoch");
  for (const prefetch::EpochCounts& e : p.per_epoch) {
    w.BeginObject()
        .Integer("epoch", e.epoch)
        .Integer("opens", e.opens)
        .Integer("ready", e.ready)
        .Integer("stalls", e.stalls)
        .Integer("deviations", e.deviations)
        .Integer("resyncs", e.resyncs)
        .Integer("stall_ns", e.stall_ns);
    if (auto loader = loader_of ? loader_of(e.epoch) : std::nullopt) {
      w.Integer("loader", loader->first).Integer("loader_epoch", loader->second);
    }
    w.EndObject();
  }
  w.EndArray();
}

}  // namespace clairfs::fs
