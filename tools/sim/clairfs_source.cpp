#include "tools/sim/clairfs_source.hpp"

#include <algorithm>
#include <numeric>
#include <string>
#include <string_view>
#include <utility>

#include "fs/dist/ownership.hpp"
#include "partitioner/pack/placement.hpp"
#include "prefetch/planner/first_readers.hpp"

namespace clairfs::sim {

Clock::TimePoint ClairfsSource::LoopClock::Now() const {
  return TimePoint(
      std::chrono::duration_cast<Duration>(std::chrono::duration<double>(loop_->now())));
}

ClairfsSource::ClairfsSource(EventLoop* loop, SharedDevice* shared_fs,
                             const std::vector<uint64_t>* file_bytes, const ClairfsSpec& spec,
                             NodeReads reads, std::vector<uint32_t> partition_of,
                             std::vector<int> homes)
    : loop_(loop),
      fs_(shared_fs),
      bytes_(file_bytes),
      spec_(spec),
      nodes_(reads.nodes()),
      clock_(loop),
      node_(reads.nodes()),
      reads_(std::move(reads)),
      partition_of_(std::move(partition_of)),
      homes_(std::move(homes)),
      own_(spec_.partitions, spec_.replicas, static_cast<int>(nodes_), homes_) {
  spec_.fetch_slots = std::max(spec_.fetch_slots, 1u);
  const uint64_t files = bytes_->size();
  partition_files_.resize(spec_.partitions);
  for (uint64_t f = 0; f < files; ++f) partition_files_[partition_of_[f]].push_back(f);
  state_.assign(files, kNotStaged);
  files_left_ = files;
  replica_state_.assign(own_.replicas() - 1, std::vector<char>(files, kNotStaged));
  replica_files_left_ = files * (own_.replicas() - 1);
  for (Node& n : node_) {
    n.streams.resize(std::max(spec_.stage_threads, 1u));
    n.ssd = std::make_unique<SharedDevice>(loop, spec.node.ssd);
    n.link = std::make_unique<SharedDevice>(loop, spec.node.link);
  }
}

namespace {

// The bytes of each partition each node reads first (first[f]: file f's
// first reader, -1 none), only the nonzero (partition, node) pairs: at most
// one per file, where the table would be partitions x nodes.
std::vector<fs::FirstBytes> FirstBytesByNode(const std::vector<int>& first,
                                             const std::vector<uint32_t>& partition_of,
                                             const std::vector<uint64_t>& file_bytes) {
  std::vector<fs::FirstBytes> pairs;
  for (size_t f = 0; f < first.size(); ++f) {
    if (first[f] >= 0) pairs.push_back({partition_of[f], first[f], file_bytes[f]});
  }
  std::sort(pairs.begin(), pairs.end(), [](const fs::FirstBytes& a, const fs::FirstBytes& b) {
    return a.partition != b.partition ? a.partition < b.partition : a.rank < b.rank;
  });
  size_t out = 0;
  for (size_t i = 0; i < pairs.size(); ++i) {
    if (out > 0 && pairs[out - 1].partition == pairs[i].partition &&
        pairs[out - 1].rank == pairs[i].rank) {
      pairs[out - 1].bytes += pairs[i].bytes;
    } else {
      pairs[out++] = pairs[i];
    }
  }
  pairs.resize(out);
  return pairs;
}

}  // namespace

Result<std::unique_ptr<ClairfsSource>> ClairfsSource::Create(
    EventLoop* loop, SharedDevice* shared_fs, const std::vector<uint64_t>* file_bytes,
    const prefetch::Sampler& sampler, const JobSpec& job, const ClairfsSpec& spec) {
  if (file_bytes->size() > UINT32_MAX) {
    return Status::InvalidArgument("the planner numbers at most 2^32 - 1 files");
  }
  // The partitioner's own placement of the files into partitions (names
  // for the hash placement, which places by path).
  ClairfsSpec fixed = spec;
  fixed.partitions = std::max(spec.partitions, 1u);
  auto policy = pack::MakePlacement(spec.placement);
  if (!policy.ok()) return policy.status();
  std::vector<std::string> names(spec.placement == "hash" ? file_bytes->size() : 0);
  std::vector<pack::PlacedFile> placed(file_bytes->size());
  for (size_t f = 0; f < placed.size(); ++f) {
    if (!names.empty()) names[f] = "f" + std::to_string(f);
    placed[f] = {names.empty() ? std::string_view() : std::string_view(names[f]), (*file_bytes)[f]};
  }
  std::vector<uint32_t> partition_of = (*policy)->Assign(placed, fixed.partitions);
  placed = {};
  names = {};
  auto reads = NodeReads::Build(sampler, job);
  if (!reads.ok()) return reads.status();
  const uint64_t world = static_cast<uint64_t>(job.nodes) * job.ranks_per_node;
  // Homes as the daemon's with the sampler's settings: each partition on the
  // node that reads most of its bytes first in the first epoch
  // (fs::PlaceByReader), else p mod N.
  // And the first-use staging order, from the same first reads (the
  // position of each file's first read by any rank).
  std::vector<int> homes;
  std::vector<uint64_t> first_step;
  const bool by_reader = spec.homes_by_reader && job.nodes > 1;
  if (by_reader || spec.stage_first_use) {
    std::vector<uint64_t> ranks;
    std::vector<int> node_of;
    for (uint32_t n = 0; n < job.nodes; ++n) {
      for (uint64_t r : prefetch::BlockLocalRanks(n, job.ranks_per_node, world)) {
        ranks.push_back(r);
        node_of.push_back(static_cast<int>(n));
      }
    }
    auto orders = sampler.OrderRanks(ranks, 0);
    if (!orders.ok()) return orders.status();
    std::vector<prefetch::FileId> identity(file_bytes->size());
    std::iota(identity.begin(), identity.end(), prefetch::FileId{0});
    prefetch::FirstReads first =
        prefetch::FirstReadsOf(*orders, node_of, identity, file_bytes->size());
    if (by_reader) {
      homes = fs::PlaceByReader(FirstBytesByNode(first.node, partition_of, *file_bytes),
                                fixed.partitions, static_cast<int>(job.nodes))
                  .homes;
    }
    if (spec.stage_first_use) first_step = std::move(first.step);
  }
  std::unique_ptr<ClairfsSource> s(new ClairfsSource(loop, shared_fs, file_bytes, fixed,
                                                     std::move(reads).value(),
                                                     std::move(partition_of), std::move(homes)));
  if (spec.stage_first_use) {
    auto units = FirstUseOrder(*file_bytes, s->partition_files_, first_step, PieceSize(spec));
    if (!units.ok()) return units.status();
    // Every holder of a partition copies its ranges, in the one order: a
    // node's own and replica ranges interleave by their first reads, as the
    // daemon's Stager orders all the packs it holds.
    s->units_left_.assign(uint64_t{fixed.partitions} * s->own_.replicas(), 0);
    for (const FirstUseUnit& u : *units) {
      for (int holder : s->own_.Owners(u.partition)) {
        const auto node = static_cast<uint32_t>(holder);
        s->node_[node].units.push_back(u);
        s->UnitsLeft(s->CopyOf(node, u.partition), u.partition)++;
      }
    }
  }
  for (uint32_t n = 0; n < job.nodes; ++n) {
    // The node's planner over its own files: their sizes and the orders in
    // their compact ids, which are also the planner's file ids.
    const std::vector<uint32_t>& files = s->reads_.Files(n);
    prefetch::PlannerInput input;
    input.order = s->reads_.OrderSourceOf(n);
    input.file_of_index.resize(files.size());
    std::iota(input.file_of_index.begin(), input.file_of_index.end(), prefetch::FileId{0});
    std::vector<uint64_t> sizes(files.size());
    for (size_t c = 0; c < files.size(); ++c) sizes[c] = (*file_bytes)[files[c]];
    input.file_size = prefetch::ShareSizes(std::move(sizes));
    prefetch::PlannerConfig c;
    c.local_ranks = prefetch::BlockLocalRanks(n, job.ranks_per_node, world);
    c.end_epoch = job.epochs;
    c.batch_size = job.batch_size;
    c.num_workers = job.workers;
    c.prefetch_factor = job.prefetch_factor;
    c.budget_bytes = spec.ram_bytes;
    auto planner = prefetch::Planner::Create(c, std::move(input), s->clock_);
    if (!planner.ok()) return planner.status();
    s->node_[n].planner = std::move(planner).value();
  }
  return s;
}

void ClairfsSource::Launch() {
  stage_start_ = loop_->now();
  // Each holder's partitions in ascending order (Ownership::PartitionsOf's);
  // with first-use ranges, a partition that has some waits for them.
  for (uint32_t p = 0; p < spec_.partitions; ++p) {
    for (int holder : own_.Owners(p)) {
      const auto node = static_cast<uint32_t>(holder);
      if (units_left_.empty() || UnitsLeft(CopyOf(node, p), p) == 0) {
        node_[node].to_stage.push_back(p);
      }
    }
  }
  for (uint32_t n = 0; n < nodes_; ++n) StageNext(n);
  // The daemons know the order from the start: the planners fetch at once.
  for (uint32_t n = 0; n < nodes_; ++n) Pump(n);
}

void ClairfsSource::StartEpoch(uint32_t epoch) {
  if (epoch != 0) return;
  for (uint32_t n = 0; n < nodes_; ++n) Pump(n);
}

void ClairfsSource::ReadSource(uint32_t home, uint32_t partition, uint64_t bytes,
                               EventLoop::Fn done) {
  Node& h = node_[home];
  h.source_reads++;
  // Needed before its turn: the home stages this partition next (after
  // the ones its copying threads are on).
  auto it = std::find(h.to_stage.begin(), h.to_stage.end(), partition);
  if (spec_.stage_first_use) {
    // The daemon's Prefer: to be finished after those waiting already,
    // ahead of further first-use ranges.
    if (it != h.to_stage.end()) {
      h.to_stage.erase(it);
      h.finish.push_back(partition);
    }
  } else if (it != h.to_stage.end() && it != h.to_stage.begin()) {
    h.to_stage.erase(it);
    h.to_stage.push_front(partition);
  }
  fs_->Transfer(
      bytes,
      [this, home, done = std::move(done)]() mutable {
        Node& h = node_[home];
        h.source_reads--;
        h.last_source_read = loop_->now();
        if (h.source_reads == 0 && h.stage_paused) {
          loop_->After(spec_.stage_yield, [this, home] {
            node_[home].stage_paused = false;
            StageNext(home);
          });
        }
        done();
      },
      static_cast<int>(home));
}

void ClairfsSource::ReadThroughHome(uint32_t node, uint64_t file, SourceCounters* count,
                                    EventLoop::Fn done) {
  const uint64_t n = (*bytes_)[file];
  const uint32_t home = HomeOf(file);
  count->shared_fs_bytes += n;
  state_[file] = kStaging;  // other reads of it wait for these bytes
  ReadSource(home, PartitionOf(file), n,
             [this, node, file, n, home, done = std::move(done)]() mutable {
               node_[home].written += n;
               node_[home].ssd->Transfer(n, [] {});  // the home's copy is written as the bytes pass
               Landed(file);
               OverLink(node, home, n, std::move(done));
             });
}

void ClairfsSource::ReadPieces(uint32_t node, uint64_t file, SourceCounters* count,
                               EventLoop::Fn done) {
  const uint64_t n = (*bytes_)[file];
  const uint32_t home = HomeOf(file);
  Pieces& p = pieces_.at(file);
  // Claimed here, so staging skips them (PartialCopy::Claim).
  std::vector<size_t> mine;
  uint64_t missing = 0;
  for (size_t i = 0; i < p.state.size(); ++i) {
    if (p.state[i] != kNotStaged) continue;
    p.state[i] = kStaging;
    mine.push_back(i);
    missing += std::min(PieceSize(), n - i * PieceSize());
  }
  const uint64_t copied = n - missing;  // staged or on their way
  count->shared_fs_bytes += missing;
  (node == home ? count->local_bytes : count->peer_bytes) += copied;
  if (!mine.empty()) piece_reads_++;
  // The missing pieces come straight to the reader as they pass into the
  // copy (as ReadThroughHome's file), the rest from the copy once every
  // piece is in.
  landing_[file].push_back([this, node, home, n, copied, done = std::move(done)]() mutable {
    node_[home].ssd->Transfer(copied, [this, node, home, n, done = std::move(done)]() mutable {
      OverLink(node, home, n, std::move(done));
    });
  });
  if (mine.empty()) return;
  ReadSource(home, PartitionOf(file), missing, [this, file, home, missing, mine = std::move(mine)] {
    node_[home].written += missing;
    node_[home].ssd->Transfer(missing, [] {});  // written as the bytes pass
    for (size_t i : mine) PieceLanded(file, i);
  });
}

void ClairfsSource::OverLink(uint32_t node, uint32_t home, uint64_t bytes, EventLoop::Fn done) {
  if (node == home) return done();
  SharedDevice* link = node_[home].link.get();
  if (!cpu_modelled()) return link->Transfer(bytes, std::move(done));
  const double peer = static_cast<double>(bytes) * spec_.cpu_per_peer_byte;
  Cpu(home, peer, [] {});  // the home's sending
  link->Transfer(bytes, [this, node, peer, done = std::move(done)]() mutable {
    Cpu(node, peer, std::move(done));  // the reader's receiving
  });
}

void ClairfsSource::Fetch(uint32_t node, uint64_t file, SourceCounters* count, EventLoop::Fn done) {
  const uint64_t n = (*bytes_)[file];
  const uint32_t home = HomeOf(file);
  if (state_[file] == kNotStaged) {
    ReadThroughHome(node, file, count, std::move(done));
  } else if (pieces_.contains(file)) {  // copied in pieces, not all in yet
    ReadPieces(node, file, count, std::move(done));
  } else if (state_[file] == kStaging) {  // its bytes are on their way to the home's SSD
    landing_[file].push_back([this, node, file, count, done = std::move(done)]() mutable {
      Fetch(node, file, count, std::move(done));
    });
  } else {
    (home == node ? count->local_bytes : count->peer_bytes) += n;
    node_[home].ssd->Transfer(n, [this, node, home, n, done = std::move(done)]() mutable {
      OverLink(node, home, n, std::move(done));
    });
  }
}

void ClairfsSource::Cpu(uint32_t node, double seconds, EventLoop::Fn done) {
  if (!cpu_modelled()) return done();
  spec_.cpus->Run(node, seconds, std::move(done));
}

void ClairfsSource::Pump(uint32_t node) {
  Node& k = node_[node];
  while (k.in_flight < spec_.fetch_slots) {
    prefetch::FetchPlan plan = k.planner->NextFetches(spec_.fetch_slots - k.in_flight);
    if (plan.fetch.empty()) return;
    for (prefetch::FileId c : plan.fetch) {
      const uint64_t f = reads_.Files(node)[c];  // the planner's ids are the node's compact ones
      k.in_flight++;
      k.waiting.try_emplace(f);
      prefetched_.reads++;
      auto fetched = [this, node, c, f] {
        Node& k = node_[node];
        k.in_flight--;
        k.planner->OnFetched(c, (*bytes_)[f]);  // what it says to drop is no longer counted
        auto it = k.waiting.find(f);
        if (it != k.waiting.end()) {
          for (auto& open : it->second) loop_->After(0, std::move(open));
          k.waiting.erase(it);
        }
        Pump(node);
      };
      Fetch(node, f, &prefetched_, [this, node, f, fetched = std::move(fetched)]() mutable {
        Cpu(node, static_cast<double>((*bytes_)[f]) * spec_.cpu_per_served_byte,
            std::move(fetched));
      });
    }
  }
}

void ClairfsSource::Read(uint32_t node, uint64_t file, EventLoop::Fn done) {
  if (cpu_modelled()) {
    // The open's round trip through the mount comes before the daemon sees it.
    return spec_.cpus->Run(node, spec_.cpu_per_open,
                           [this, node, file, done = std::move(done)]() mutable {
                             Open(node, file, std::move(done));
                           });
  }
  Open(node, file, std::move(done));
}

void ClairfsSource::Open(uint32_t node, uint64_t file, EventLoop::Fn done) {
  Node& k = node_[node];
  const uint64_t n = (*bytes_)[file];
  counters_.reads++;
  // A file the node's orders do not name is one the planner has no id for.
  const prefetch::OpenResult open = k.planner->OnOpen(reads_.Find(node, file));
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
    Fetch(node, file, &counters_, [this, node, file, open, done = std::move(done)]() mutable {
      Cpu(node, static_cast<double>((*bytes_)[file]) * spec_.cpu_per_served_byte,
          [this, node, open, done = std::move(done)] {
            node_[node].planner->EndStall(open);
            done();
          });
    });
  }
  Pump(node);
}

}  // namespace clairfs::sim
