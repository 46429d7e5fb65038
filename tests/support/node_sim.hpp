// NodeSim: one node's training ranks and prefetcher, simulated around a
// Planner on a FakeClock - for tests and benchmarks, not the daemon.
//
// Each step: fetches that are due complete (OnFetched), the fetcher asks
// NextFetches for more (dropping what the plan evicts; with nothing to fetch
// it calls Maintain, as an idle fetch thread does), and one local rank's
// DataLoader (LoaderSim) opens its next file (OnOpen). An open that is not
// ready waits for its fetch, or is read on demand and offered to Admit. The
// simulator keeps its own model of what is in RAM and checks it against the
// planner on every step: the budget is never exceeded, readiness agrees,
// resident bytes agree. Violations are counted, not thrown. Single-thread.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/clock.hpp"
#include "prefetch/order/loader_workers.hpp"
#include "prefetch/planner/planner.hpp"

namespace clairfs::prefetch {

struct NodeSimOptions {
  LoaderShape loader;              // the ranks' DataLoader
  uint64_t fetch_delay_steps = 0;  // a fetch completes this many steps after it starts
  uint64_t fetches_per_step = 16;  // NextFetches(max) per step
  uint64_t max_in_flight = 64;     // fetches outstanding at most
  Clock::Duration step_time = std::chrono::microseconds(100);  // fake time per step
  uint64_t seed = 1;  // worker speed jitter and rank interleaving
  // > 0: an open of a file that is among the last this many opens reported
  // is not reported to the planner (inotify merges identical events queued
  // back to back); the reader still finds the file or reads it on demand.
  uint64_t merge_repeated_opens = 0;
  // > 0: a rank that has opened this many files more than the slowest live
  // rank waits for it (data-parallel ranks train in step); 0: the ranks
  // drift apart as a random walk.
  uint64_t max_skew_opens = 0;
  // Opens of each sample's file (a Dataset that reads a header, then opens
  // the file again to decode it): the later ones come from the same rank
  // some opens later, interleaved with its other workers' and the other
  // ranks' opens (a worker is in one sample at a time, so at most W samples
  // of a rank have opens left). 1: one open per sample.
  uint64_t opens_per_sample = 1;
};

struct NodeSimReport {
  std::vector<uint8_t> ready;  // per open, in order: found resident
  std::vector<FileId> opened;  // per open, in order: the file
  uint64_t steps = 0;
  // Files loaded and reported with OnFetched: fetches and kept demand reads.
  uint64_t loads = 0;
  uint64_t budget_violations = 0;  // steps where planner or RAM model exceeded the budget
  uint64_t model_mismatches = 0;   // planner and RAM model disagreed
  uint64_t max_used_bytes = 0;     // RAM model's peak (resident + in flight)
  std::string first_problem;       // description of the first violation or mismatch

  // Fraction of opens from `from` on that found their file ready (1 when none).
  double ReadyFraction(uint64_t from) const;
};

// One epoch of a Keras fit over a Sequence with model.fit(shuffle=True), as
// one reader opens it: `lead` in order, then `reads` of the candidate
// `batches` (all when reads >= their count) in an order drawn from `seed` (in
// place of Python's unseeded random), each batch's files in order. Flattened:
// give it to RunEpoch with the loader's batch_size = the batches' length.
std::vector<FileId> KerasFitReads(const std::vector<std::vector<FileId>>& lead,
                                  const std::vector<std::vector<FileId>>& batches, uint64_t reads,
                                  uint64_t seed);

class NodeSim {
 public:
  NodeSim(Planner& planner, FakeClock& clock, std::vector<uint64_t> file_sizes,
          NodeSimOptions options);

  // One epoch: per_rank[g] is what local rank g really reads, in sampler
  // order; the ranks' loaders run interleaved until all are done.
  void RunEpoch(const std::vector<std::vector<FileId>>& per_rank);
  // Opens `files` one after another (a validation pass, a stray reader).
  void OpenSequence(const std::vector<FileId>& files);
  // Runs fetcher steps without opens.
  void Idle(uint64_t steps);

  const NodeSimReport& report() const { return report_; }
  uint64_t ram_bytes() const { return ram_bytes_ + pending_bytes_; }

 private:
  void Step();
  void Open(FileId f);
  void CompleteFetch(FileId f);
  void Drop(FileId f);
  void Check(const char* where);

  Planner& planner_;
  FakeClock& clock_;
  std::vector<uint64_t> sizes_;
  NodeSimOptions options_;
  NodeSimReport report_;
  uint64_t rng_state_;
  std::unordered_map<FileId, uint64_t> ram_;      // resident in the model
  std::unordered_map<FileId, uint64_t> pending_;  // file -> due step
  std::vector<FileId> reported_;  // ring of the last merge_repeated_opens reported opens
  size_t reported_pos_ = 0;
  // By rank: files whose sample still has opens to make, and how many.
  std::vector<std::vector<std::pair<FileId, uint64_t>>> again_;
  uint64_t ram_bytes_ = 0;
  uint64_t pending_bytes_ = 0;
};

}  // namespace clairfs::prefetch
