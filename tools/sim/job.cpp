#include "tools/sim/job.hpp"

#include <algorithm>
#include <deque>
#include <numeric>
#include <string>
#include <utility>

namespace clairfs::sim {
namespace {

using prefetch::Index;

SourceCounters Minus(const SourceCounters& a, const SourceCounters& b) {
  return {a.ram_bytes - b.ram_bytes, a.local_bytes - b.local_bytes, a.peer_bytes - b.peer_bytes,
          a.shared_fs_bytes - b.shared_fs_bytes, a.reads - b.reads};
}

// One run of the job: the state of every rank's loader and of the step.
class JobRun {
 public:
  JobRun(EventLoop* loop, const JobSpec& job, const prefetch::Sampler& sampler, DataSource* source,
         const EpochFn& on_epoch, NodeCpus* cpus)
      : loop_(loop),
        job_(job),
        sampler_(sampler),
        source_(source),
        on_epoch_(on_epoch),
        cpus_(cpus != nullptr && cpus->modelled() ? cpus : nullptr) {
    ranks_.resize(static_cast<size_t>(job.nodes) * job.ranks_per_node);
    for (size_t r = 0; r < ranks_.size(); ++r)
      ranks_[r].node = static_cast<uint32_t>(r / job.ranks_per_node);
  }

  Status Run() {
    loop_->After(0, [this] {
      source_->Launch();
      loop_->After(job_.start_seconds, [this] { BeginEpoch(0); });
    });
    loop_->Run();
    return status_;
  }
  std::vector<EpochResult>& results() { return results_; }

 private:
  struct Rank {
    uint32_t node = 0;
    std::vector<std::vector<Index>> batches;
    std::vector<char> ready;                 // per batch
    size_t dispatched = 0;                   // batches asked for so far
    std::vector<std::deque<size_t>> queues;  // per worker: batches to load, in order
    std::vector<char> busy;                  // per worker
    std::vector<size_t> file;                // per worker: its batch's file being read
    bool waiting = false;
    double wait_from = 0, stalled = 0;
  };

  void BeginEpoch(uint32_t epoch) {
    epoch_ = epoch;
    // Before StartEpoch: a policy may start prefetching there. Epoch 0's row
    // counts from the launch, when the daemons start.
    before_prefetched_ = epoch == 0 ? SourceCounters{} : source_->prefetched();
    source_->StartEpoch(epoch);
    std::vector<uint64_t> all(ranks_.size());
    std::iota(all.begin(), all.end(), 0);
    auto orders = sampler_.OrderRanks(all, epoch);
    if (!orders.ok()) {
      status_ = orders.status();
      return;  // no more events: the run ends here
    }
    steps_ = UINT64_MAX;
    for (size_t r = 0; r < ranks_.size(); ++r) {
      Rank& k = ranks_[r];
      k.batches.clear();
      const auto& order = (*orders)[r];
      for (size_t at = 0; at < order.size(); at += job_.batch_size) {
        const size_t end = std::min(order.size(), at + job_.batch_size);
        if (end - at < job_.batch_size && job_.drop_last) break;
        k.batches.emplace_back(order.begin() + static_cast<ptrdiff_t>(at),
                               order.begin() + static_cast<ptrdiff_t>(end));
      }
      steps_ = std::min<uint64_t>(steps_, k.batches.size());
    }
    epoch_start_ = loop_->now();
    before_ = source_->counters();
    step_ = 0;
    if (steps_ == 0) return EndEpoch();
    for (Rank& k : ranks_) {
      k.ready.assign(steps_, 0);
      k.dispatched = 0;
      k.queues.assign(job_.workers, {});
      k.busy.assign(job_.workers, 0);
      k.file.assign(job_.workers, 0);
      k.waiting = false;
      k.stalled = 0;
      const uint64_t ahead = static_cast<uint64_t>(job_.workers) * job_.prefetch_factor;
      for (uint64_t i = 0; i < std::min(ahead, steps_); ++i) Dispatch(k);
    }
    BeginStep();
  }

  void BeginStep() {
    left_ = ranks_.size();
    for (Rank& k : ranks_) {
      if (k.ready[step_]) {
        TakeBatch(k);
      } else {
        k.waiting = true;
        k.wait_from = loop_->now();
      }
    }
  }

  // The rank has its step's batch: asks for one more and computes.
  void TakeBatch(Rank& k) {
    if (k.dispatched < steps_) Dispatch(k);
    const bool first = epoch_ == 0 && step_ == 0;
    const double compute = job_.compute_seconds + (first ? job_.first_step_seconds : 0);
    if (cpus_ != nullptr && job_.compute_on_cpu)
      return cpus_->Run(k.node, compute, [this] { StepDone(); });
    loop_->After(compute, [this] { StepDone(); });
  }

  void StepDone() {
    if (--left_ > 0) return;
    if (++step_ < steps_) return BeginStep();
    EndEpoch();
  }

  void EndEpoch() {
    EpochResult e;
    e.seconds = loop_->now() - epoch_start_;
    e.steps = steps_;
    double stalled = 0;
    for (const Rank& k : ranks_) stalled += k.stalled;
    e.stall_fraction =
        e.seconds > 0 ? stalled / (e.seconds * static_cast<double>(ranks_.size())) : 0;
    e.sources = Minus(source_->counters(), before_);
    e.prefetched = Minus(source_->prefetched(), before_prefetched_);
    results_.push_back(e);
    if (on_epoch_) on_epoch_(epoch_, e);
    if (epoch_ + 1 < job_.epochs) BeginEpoch(epoch_ + 1);
  }

  void Dispatch(Rank& k) {
    const size_t i = k.dispatched++;
    const size_t w = i % job_.workers;
    k.queues[w].push_back(i);
    if (!k.busy[w]) RunWorker(k, w);
  }

  void RunWorker(Rank& k, size_t w) {
    if (k.queues[w].empty()) {
      k.busy[w] = 0;
      return;
    }
    k.busy[w] = 1;
    LoadFile(k, w, k.queues[w].front(), 0);
  }

  void LoadFile(Rank& k, size_t w, size_t batch, size_t file) {
    if (file == k.batches[batch].size()) {
      k.queues[w].pop_front();
      BatchReady(k, batch);
      return RunWorker(k, w);
    }
    k.file[w] = file;
    // The callback names the worker by one number (no allocation of its
    // own); its batch is the front of its queue until the batch is loaded.
    const uint64_t worker = static_cast<uint64_t>(&k - ranks_.data()) * job_.workers + w;
    source_->Read(k.node, k.batches[batch][file], [this, worker] { FileRead(worker); });
  }

  // A worker has its file's bytes: decodes it, then reads the next.
  void FileRead(uint64_t worker) {
    if (job_.file_seconds <= 0 || source_->decodes()) return NextFile(worker);
    if (cpus_ != nullptr) {
      return cpus_->Run(ranks_[worker / job_.workers].node, job_.file_seconds,
                        [this, worker] { NextFile(worker); });
    }
    loop_->After(job_.file_seconds, [this, worker] { NextFile(worker); });
  }

  void NextFile(uint64_t worker) {
    Rank& k = ranks_[worker / job_.workers];
    const size_t w = worker % job_.workers;
    LoadFile(k, w, k.queues[w].front(), k.file[w] + 1);
  }

  void BatchReady(Rank& k, size_t batch) {
    k.ready[batch] = 1;
    if (k.waiting && batch == step_) {
      k.waiting = false;
      k.stalled += loop_->now() - k.wait_from;
      TakeBatch(k);
    }
  }

  EventLoop* loop_;
  const JobSpec& job_;
  const prefetch::Sampler& sampler_;
  DataSource* source_;
  const EpochFn& on_epoch_;
  NodeCpus* cpus_;  // null: the cores are not modelled
  std::vector<Rank> ranks_;
  std::vector<EpochResult> results_;
  Status status_;
  uint32_t epoch_ = 0;
  uint64_t steps_ = 0, step_ = 0;
  size_t left_ = 0;  // ranks yet to finish the step
  double epoch_start_ = 0;
  SourceCounters before_;             // the source's counters at the epoch's start
  SourceCounters before_prefetched_;  // and its prefetches, before its StartEpoch
};

}  // namespace

Result<std::vector<EpochResult>> RunJob(EventLoop* loop, const JobSpec& job,
                                        const prefetch::Sampler& sampler, DataSource* source,
                                        const EpochFn& on_epoch, NodeCpus* cpus) {
  const uint64_t world = static_cast<uint64_t>(job.nodes) * job.ranks_per_node;
  if (world == 0 || job.workers == 0 || job.prefetch_factor == 0 || job.batch_size == 0) {
    return Status::InvalidArgument(
        "the job needs at least one node, rank per node, worker, batch of prefetch and sample "
        "per batch");
  }
  if (sampler.world_size() != world) {
    return Status::InvalidArgument("the order is for " + std::to_string(sampler.world_size()) +
                                   " ranks, the job has " + std::to_string(world));
  }
  JobRun run(loop, job, sampler, source, on_epoch, cpus);
  CLAIRFS_RETURN_IF_ERROR(run.Run());
  return std::move(run.results());
}

}  // namespace clairfs::sim
