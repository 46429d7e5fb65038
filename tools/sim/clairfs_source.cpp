#include "tools/sim/clairfs_source.hpp"

#include <algorithm>
#include <numeric>
#include <utility>

namespace clairfs::sim {

Clock::TimePoint ClairfsSource::LoopClock::Now() const {
  return TimePoint(
      std::chrono::duration_cast<Duration>(std::chrono::duration<double>(loop_->now())));
}

ClairfsSource::ClairfsSource(EventLoop* loop, SharedDevice* shared_fs,
                             const std::vector<uint64_t>* file_bytes, const ClairfsSpec& spec,
                             uint32_t nodes)
    : loop_(loop),
      fs_(shared_fs),
      bytes_(file_bytes),
      spec_(spec),
      nodes_(nodes),
      clock_(loop),
      node_(nodes) {
  spec_.partitions = std::max(spec_.partitions, 1u);
  spec_.fetch_slots = std::max(spec_.fetch_slots, 1u);
  partition_bytes_.assign(spec_.partitions, 0);
  for (uint64_t f = 0; f < bytes_->size(); ++f) partition_bytes_[PartitionOf(f)] += (*bytes_)[f];
  staged_.assign(spec_.partitions, 0);
  for (Node& n : node_) {
    n.ssd = std::make_unique<SharedDevice>(loop, spec.node.ssd);
    n.link = std::make_unique<SharedDevice>(loop, spec.node.link);
  }
}

Result<std::unique_ptr<ClairfsSource>> ClairfsSource::Create(
    EventLoop* loop, SharedDevice* shared_fs, const std::vector<uint64_t>* file_bytes,
    const prefetch::Sampler& sampler, const JobSpec& job, const ClairfsSpec& spec) {
  if (file_bytes->size() > UINT32_MAX) {
    return Status::InvalidArgument("the planner numbers at most 2^32 - 1 files");
  }
  std::unique_ptr<ClairfsSource> s(new ClairfsSource(loop, shared_fs, file_bytes, spec, job.nodes));
  prefetch::PlannerInput input;
  input.order = prefetch::OrderSourceFromSampler(sampler);
  input.file_of_index.resize(file_bytes->size());
  std::iota(input.file_of_index.begin(), input.file_of_index.end(), prefetch::FileId{0});
  // One size table for every node's planner: Planner::Create copies the
  // input, and with it only the pointer.
  input.file_size = prefetch::ShareSizes(*file_bytes);
  const uint64_t world = static_cast<uint64_t>(job.nodes) * job.ranks_per_node;
  for (uint32_t n = 0; n < job.nodes; ++n) {
    prefetch::PlannerConfig c;
    c.local_ranks = prefetch::BlockLocalRanks(n, job.ranks_per_node, world);
    c.end_epoch = job.epochs;
    c.batch_size = job.batch_size;
    c.num_workers = job.workers;
    c.prefetch_factor = job.prefetch_factor;
    c.budget_bytes = spec.ram_bytes;
    auto planner = prefetch::Planner::Create(c, input, s->clock_);
    if (!planner.ok()) return planner.status();
    s->node_[n].planner = std::move(planner).value();
  }
  return s;
}

uint32_t ClairfsSource::PartitionOf(uint64_t file) const {
  return static_cast<uint32_t>(file * spec_.partitions / bytes_->size());
}

void ClairfsSource::StartEpoch(uint32_t epoch) {
  if (epoch != 0) return;
  partitions_left_ = spec_.partitions;
  stage_start_ = loop_->now();
  for (uint32_t n = 0; n < nodes_; ++n) StageNext(n, n);
  for (uint32_t n = 0; n < nodes_; ++n) Pump(n);
}

void ClairfsSource::StageNext(uint32_t node, uint32_t partition) {
  if (partition >= spec_.partitions) return;
  const uint64_t n = partition_bytes_[partition];
  fs_->Transfer(n, [this, node, partition, n] {
    node_[node].ssd->Transfer(n, [this, node, partition] {
      staged_[partition] = 1;
      if (--partitions_left_ == 0) staged_at_ = loop_->now() - stage_start_;
      StageNext(node, partition + nodes_);
    });
  });
}

void ClairfsSource::Fetch(uint32_t node, uint64_t file, SourceCounters* count, EventLoop::Fn done) {
  const uint64_t n = (*bytes_)[file];
  const uint32_t partition = PartitionOf(file);
  const uint32_t home = partition % nodes_;
  if (!staged_[partition]) {
    count->shared_fs_bytes += n;
    fs_->Transfer(n, std::move(done));
  } else if (home == node) {
    count->local_bytes += n;
    node_[node].ssd->Transfer(n, std::move(done));
  } else {
    count->peer_bytes += n;
    SharedDevice* link = node_[home].link.get();
    node_[home].ssd->Transfer(
        n, [link, n, done = std::move(done)]() mutable { link->Transfer(n, std::move(done)); });
  }
}

void ClairfsSource::Pump(uint32_t node) {
  Node& k = node_[node];
  while (k.in_flight < spec_.fetch_slots) {
    prefetch::FetchPlan plan = k.planner->NextFetches(spec_.fetch_slots - k.in_flight);
    if (plan.fetch.empty()) return;
    for (prefetch::FileId f : plan.fetch) {
      k.in_flight++;
      k.waiting.try_emplace(f);
      prefetched_.reads++;
      Fetch(node, f, &prefetched_, [this, node, f] {
        Node& k = node_[node];
        k.in_flight--;
        k.planner->OnFetched(f, (*bytes_)[f]);  // what it says to drop is no longer counted
        auto it = k.waiting.find(f);
        if (it != k.waiting.end()) {
          for (auto& open : it->second) loop_->After(0, std::move(open));
          k.waiting.erase(it);
        }
        Pump(node);
      });
    }
  }
}

void ClairfsSource::Read(uint32_t node, uint64_t file, EventLoop::Fn done) {
  Node& k = node_[node];
  const uint64_t n = (*bytes_)[file];
  counters_.reads++;
  const prefetch::OpenResult open = k.planner->OnOpen(static_cast<prefetch::FileId>(file));
  auto it = k.waiting.find(file);
  if (open.ready) {
    counters_.ram_bytes += n;
    loop_->After(0, std::move(done));
  } else if (it != k.waiting.end()) {
    // Being fetched: served from RAM when the fetch lands.
    counters_.ram_bytes += n;
    it->second.push_back([this, node, open, done = std::move(done)] {
      node_[node].planner->EndStall(open);
      done();
    });
  } else {
    Fetch(node, file, &counters_, [this, node, open, done = std::move(done)] {
      node_[node].planner->EndStall(open);
      done();
    });
  }
  Pump(node);
}

}  // namespace clairfs::sim
