// The "prefetch" section of stats.json (documented in docs/fuse.md).
#include <string>

#include "fs/prefetch/prefetch_engine.hpp"

namespace clairfs::fs {
namespace {

class Obj {
 public:
  Obj& Add(const char* key, uint64_t v) { return Raw(key, std::to_string(v)); }
  Obj& Bool(const char* key, bool v) { return Raw(key, v ? "true" : "false"); }
  Obj& Str(const char* key, const std::string& v) { return Raw(key, "\"" + v + "\""); }
  Obj& Raw(const char* key, const std::string& v) {
    out_ += (out_.empty() ? "{" : ", ") + std::string("\"") + key + "\": " + v;
    return *this;
  }
  std::string Done() const { return out_.empty() ? "{}" : out_ + "}"; }

 private:
  std::string out_;
};

uint64_t Get(const std::atomic<uint64_t>& a) { return a.load(std::memory_order_relaxed); }

}  // namespace

std::string PrefetchEngine::StatsJson() const {
  const prefetch::PlannerStats p = planner_->Stats();
  const Counters& c = counters_;
  std::string ranks = "[";
  for (const prefetch::RankPosition& r : planner_->Positions()) {
    ranks += (ranks.size() > 1 ? ", " : "") +
             Obj().Add("rank", r.rank).Add("epoch", r.epoch).Add("offset", r.offset).Done();
  }
  ranks += "]";
  std::string epochs = "[";
  for (const prefetch::EpochCounts& e : p.per_epoch) {
    epochs += (epochs.size() > 1 ? ", " : "") + Obj()
                                                    .Add("epoch", e.epoch)
                                                    .Add("opens", e.opens)
                                                    .Add("ready", e.ready)
                                                    .Add("stalls", e.stalls)
                                                    .Add("deviations", e.deviations)
                                                    .Add("resyncs", e.resyncs)
                                                    .Done();
  }
  epochs += "]";
  Obj hits;
  hits.Add("page_cache", Get(c.ready_pushed))
      .Add("ram", Get(c.ready_ram))
      .Add("not_ready", Get(c.not_ready))
      .Str("reads", "top-level ram/local_pack; peer and fallback in cluster");
  Obj push;
  push.Add("pushes", Get(c.pushes))
      .Add("bytes", Get(c.pushed_bytes))
      .Add("unknown_inode", Get(c.push_unknown_inode))
      .Add("listed_pushes", Get(c.listed_pushes))
      .Add("late_pushes", Get(c.late_pushes))
      .Add("errors", Get(c.push_errors));
  Obj out;
  out.Str("sampler", options_.sampler)
      .Bool("enabled", p.enabled)
      .Bool("lost", p.lost)
      .Raw("ranks", ranks)
      .Add("opens", Get(c.opens))
      .Add("predicted", p.predicted_opens)
      .Add("ready", Get(c.ready))
      .Raw("open_hits", hits.Done())
      .Add("stalls", p.stalled_opens)
      .Add("stall_ns", p.stall_ns)
      .Add("max_stall_ns", p.max_stall_ns)
      .Add("waits", Get(c.waits))
      .Add("wait_ns", Get(c.wait_ns))
      .Add("wait_timeouts", Get(c.wait_timeouts))
      .Add("lead_files", p.lead_files)
      .Add("lead_bytes", p.lead_bytes)
      .Add("lead_steps", p.lead_steps)
      .Add("epoch", p.epoch)
      .Add("deviations", p.deviations)
      .Add("repeat_opens", p.repeat_opens)
      .Add("resync_attempts", p.resync_attempts)
      .Add("resyncs", p.resyncs)
      .Add("budget_bytes", p.budget_bytes)
      .Add("used_bytes", p.resident_bytes + p.in_flight_bytes)
      .Add("peak_used_bytes", p.peak_used_bytes)
      .Add("held_bytes", held_bytes())
      .Add("max_held_bytes", Get(c.max_held_bytes))
      .Add("resident_files", p.resident_files)
      .Add("fetched", Get(c.fetched))
      .Add("fetched_bytes", Get(c.fetched_bytes))
      .Add("fetch_failures", Get(c.fetch_failures))
      .Add("evictions", Get(c.evictions))
      .Add("short_budget_stops", p.short_budget_stops)
      .Add("order_errors", p.order_errors)
      .Bool("batch_mode", p.batch_mode)
      .Raw("batches", Obj()
                          .Add("pinned", p.batches_pinned)
                          .Add("ready_at_pin", p.batches_ready)
                          .Done())
      .Raw("page_cache", push.Done())
      .Raw("per_epoch", epochs);
  return out.Done();
}

}  // namespace clairfs::fs
