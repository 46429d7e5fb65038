#include "tests/support/node_sim.hpp"

#include <algorithm>
#include <random>

#include "tests/support/loader_sim.hpp"

namespace clairfs::prefetch {

double NodeSimReport::ReadyFraction(uint64_t from) const {
  if (from >= ready.size()) return 1.0;
  uint64_t n = 0;
  for (uint64_t i = from; i < ready.size(); ++i) n += ready[i];
  return static_cast<double>(n) / static_cast<double>(ready.size() - from);
}

std::vector<FileId> KerasFitReads(const std::vector<std::vector<FileId>>& lead,
                                  const std::vector<std::vector<FileId>>& batches, uint64_t reads,
                                  uint64_t seed) {
  std::vector<FileId> out;
  for (const auto& b : lead) out.insert(out.end(), b.begin(), b.end());
  std::vector<size_t> order(batches.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::mt19937_64 rng(seed);
  std::shuffle(order.begin(), order.end(), rng);
  order.resize(std::min<uint64_t>(reads, order.size()));
  for (size_t i : order) out.insert(out.end(), batches[i].begin(), batches[i].end());
  return out;
}

NodeSim::NodeSim(Planner& planner, FakeClock& clock, std::vector<uint64_t> file_sizes,
                 NodeSimOptions options)
    : planner_(planner),
      clock_(clock),
      sizes_(std::move(file_sizes)),
      options_(options),
      rng_state_(options.seed * 0x9E3779B97F4A7C15ull + 1) {}

void NodeSim::RunEpoch(const std::vector<std::vector<FileId>>& per_rank) {
  std::vector<LoaderSim> loaders;
  for (size_t g = 0; g < per_rank.size(); ++g) {
    loaders.emplace_back(per_rank[g].size(), options_.loader, options_.seed * 131 + g);
  }
  std::vector<size_t> live(per_rank.size());
  for (size_t g = 0; g < live.size(); ++g) live[g] = g;
  std::vector<uint64_t> opened(per_rank.size(), 0);
  again_.assign(per_rank.size(), {});
  while (!live.empty()) {
    // Ranks advance at about the same rate: a random live rank opens next.
    rng_state_ = rng_state_ * 6364136223846793005ull + 1442695040888963407ull;
    size_t pick = (rng_state_ >> 33) % live.size();
    if (options_.max_skew_opens > 0) {
      size_t slowest = 0;
      for (size_t i = 1; i < live.size(); ++i) {
        if (opened[live[i]] < opened[live[slowest]]) slowest = i;
      }
      if (opened[live[pick]] >= opened[live[slowest]] + options_.max_skew_opens) pick = slowest;
    }
    size_t g = live[pick];
    // A sample's later open, half of the time while any is due.
    std::vector<std::pair<FileId, uint64_t>>& again = again_[g];
    if (!again.empty()) {
      rng_state_ = rng_state_ * 6364136223846793005ull + 1442695040888963407ull;
    }
    // Each worker is in one sample at a time: at most W samples of a rank
    // have opens left.
    const uint64_t busy = std::max<uint64_t>(1, options_.loader.num_workers);
    if (!again.empty() && (again.size() >= busy || ((rng_state_ >> 40) & 1) != 0)) {
      size_t k = (rng_state_ >> 20) % again.size();
      FileId f = again[k].first;
      if (--again[k].second == 0) again.erase(again.begin() + static_cast<std::ptrdiff_t>(k));
      Step();
      Open(f);
      continue;
    }
    std::optional<uint64_t> pos = loaders[g].Next();
    if (!pos) {
      if (!again.empty()) continue;
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(pick));
      continue;
    }
    ++opened[g];
    Step();
    Open(per_rank[g][*pos]);
    if (options_.opens_per_sample > 1) {
      again.emplace_back(per_rank[g][*pos], options_.opens_per_sample - 1);
    }
  }
}

void NodeSim::OpenSequence(const std::vector<FileId>& files) {
  for (FileId f : files) {
    Step();
    Open(f);
  }
}

void NodeSim::Idle(uint64_t steps) {
  for (uint64_t i = 0; i < steps; ++i) Step();
}

void NodeSim::Step() {
  ++report_.steps;
  clock_.Advance(options_.step_time);
  std::vector<FileId> due;
  for (const auto& [f, at] : pending_) {
    if (at <= report_.steps) due.push_back(f);
  }
  std::sort(due.begin(), due.end());
  for (FileId f : due) CompleteFetch(f);
  uint64_t room =
      options_.max_in_flight > pending_.size() ? options_.max_in_flight - pending_.size() : 0;
  FetchPlan plan = planner_.NextFetches(std::min(room, options_.fetches_per_step));
  if (plan.fetch.empty()) planner_.Maintain();  // as an idle fetch thread does
  for (FileId v : plan.evict) Drop(v);
  for (FileId f : plan.fetch) {
    pending_[f] = report_.steps + options_.fetch_delay_steps;
    pending_bytes_ += sizes_[f];
  }
  Check("after NextFetches");
  if (options_.fetch_delay_steps == 0) {
    for (FileId f : plan.fetch) CompleteFetch(f);
    Check("after instant fetches");
  }
}

void NodeSim::CompleteFetch(FileId f) {
  auto it = pending_.find(f);
  if (it == pending_.end()) return;
  pending_.erase(it);
  ++report_.loads;
  pending_bytes_ -= sizes_[f];
  ram_[f] = sizes_[f];
  ram_bytes_ += sizes_[f];
  for (FileId v : planner_.OnFetched(f, sizes_[f])) Drop(v);
}

void NodeSim::Drop(FileId f) {
  auto it = ram_.find(f);
  if (it == ram_.end()) return;
  ram_bytes_ -= it->second;
  ram_.erase(it);
}

void NodeSim::Open(FileId f) {
  report_.opened.push_back(f);
  bool in_ram = ram_.count(f) != 0;
  if (options_.merge_repeated_opens > 0) {
    if (std::find(reported_.begin(), reported_.end(), f) != reported_.end()) {
      report_.ready.push_back(in_ram ? 1 : 0);
      if (!in_ram) clock_.Advance(options_.step_time * 4);  // a demand read, not kept
      return;
    }
    if (reported_.size() < options_.merge_repeated_opens) {
      reported_.push_back(f);
    } else {
      reported_[reported_pos_] = f;
      reported_pos_ = (reported_pos_ + 1) % reported_.size();
    }
  }
  OpenResult r = planner_.OnOpen(f);
  report_.ready.push_back(r.ready ? 1 : 0);
  if (r.ready != in_ram && report_.model_mismatches++ == 0) {
    report_.first_problem = "readiness disagrees for file " + std::to_string(f);
  }
  if (r.ready) return;
  if (pending_.count(f) != 0) {
    // Wait for the fetch under way.
    clock_.Advance(options_.step_time);
    CompleteFetch(f);
  } else if (f < sizes_.size()) {
    clock_.Advance(options_.step_time * 4);  // a demand read
    Admission a = planner_.Admit(f, sizes_[f]);
    for (FileId v : a.evict) Drop(v);
    if (a.admitted) {
      pending_[f] = report_.steps;
      pending_bytes_ += sizes_[f];
      CompleteFetch(f);
    }
  }
  planner_.EndStall(r);
  Check("after open");
}

void NodeSim::Check(const char* where) {
  PlannerStats s = planner_.Stats();
  uint64_t model = ram_bytes_ + pending_bytes_;
  report_.max_used_bytes = std::max(report_.max_used_bytes, model);
  auto note = [&](uint64_t& counter, const std::string& what) {
    if (counter++ == 0 && report_.first_problem.empty()) {
      report_.first_problem = what + " " + where + " at step " + std::to_string(report_.steps);
    }
  };
  if (s.resident_bytes + s.in_flight_bytes > s.budget_bytes || model > s.budget_bytes) {
    note(report_.budget_violations, "budget exceeded");
  }
  if (s.resident_bytes != ram_bytes_ || s.in_flight_bytes != pending_bytes_) {
    note(report_.model_mismatches, "planner/RAM model bytes disagree");
  }
}

}  // namespace clairfs::prefetch
