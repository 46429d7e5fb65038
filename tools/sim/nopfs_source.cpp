#include "tools/sim/nopfs_source.hpp"

#include <algorithm>
#include <numeric>
#include <utility>

#include "prefetch/planner/planner_config.hpp"

namespace clairfs::sim {

NopfsSource::NopfsSource(EventLoop* loop, SharedDevice* shared_fs,
                         const std::vector<uint64_t>* file_bytes, const NopfsSpec& spec,
                         uint32_t nodes)
    : loop_(loop), fs_(shared_fs), bytes_(file_bytes), spec_(spec) {
  tier_.assign(nodes, std::vector<Tier>(file_bytes->size(), Tier::kNone));
  held_.assign(nodes, std::vector<char>(file_bytes->size(), 0));
  holders_.assign(file_bytes->size(), {kNobody, kNobody});
  for (uint32_t n = 0; n < nodes; ++n) {
    ssd_.push_back(std::make_unique<SharedDevice>(loop, spec.node.ssd));
    link_.push_back(std::make_unique<SharedDevice>(loop, spec.node.link));
  }
}

Result<std::unique_ptr<NopfsSource>> NopfsSource::Create(EventLoop* loop, SharedDevice* shared_fs,
                                                         const std::vector<uint64_t>* file_bytes,
                                                         const prefetch::Sampler& sampler,
                                                         const JobSpec& job,
                                                         const NopfsSpec& spec) {
  std::unique_ptr<NopfsSource> s(new NopfsSource(loop, shared_fs, file_bytes, spec, job.nodes));
  const uint64_t world = static_cast<uint64_t>(job.nodes) * job.ranks_per_node;
  const uint64_t files = file_bytes->size();
  for (uint32_t n = 0; n < job.nodes; ++n) {
    // Accesses over the whole job, and when each file is first read.
    std::vector<uint64_t> count(files, 0), first(files, UINT64_MAX);
    uint64_t at = 0;
    const auto ranks = prefetch::BlockLocalRanks(n, job.ranks_per_node, world);
    for (uint32_t e = 0; e < job.epochs; ++e) {
      auto orders = sampler.OrderRanks(ranks, e);
      if (!orders.ok()) return orders.status();
      for (const auto& order : *orders) {
        for (prefetch::Index i : order) {
          count[i]++;
          first[i] = std::min(first[i], at++);
        }
      }
    }
    std::vector<uint64_t> by(files);
    std::iota(by.begin(), by.end(), 0);
    std::stable_sort(by.begin(), by.end(), [&](uint64_t a, uint64_t b) {
      return count[a] != count[b] ? count[a] > count[b] : first[a] < first[b];
    });
    uint64_t ram = spec.ram_bytes, ssd = spec.ssd_bytes;
    for (uint64_t f : by) {
      if (count[f] == 0) break;
      const uint64_t b = (*file_bytes)[f];
      if (b <= ram) {
        s->tier_[n][f] = Tier::kRam;
        ram -= b;
      } else if (b <= ssd) {
        s->tier_[n][f] = Tier::kSsd;
        ssd -= b;
      }
    }
  }
  return s;
}

int NopfsSource::Holder(uint32_t node, uint64_t file) const {
  const auto& [first, second] = holders_[file];
  const uint32_t n = first != node ? first : second;
  return n == kNobody ? -1 : static_cast<int>(n);
}

void NopfsSource::Hold(uint32_t node, uint64_t file) {
  // A node keeps a file once (nothing is evicted): an insertion into the two
  // lowest, kNobody sorting last.
  held_[node][file] = 1;
  auto& [first, second] = holders_[file];
  if (node < first) {
    second = first;
    first = node;
  } else if (node < second && node != first) {
    second = node;
  }
}

void NopfsSource::Read(uint32_t node, uint64_t file, EventLoop::Fn done) {
  const uint64_t n = (*bytes_)[file];
  counters_.reads++;
  const Tier tier = tier_[node][file];
  if (held_[node][file]) {
    if (tier == Tier::kRam) {
      counters_.ram_bytes += n;
      loop_->After(0, std::move(done));
    } else {
      counters_.local_bytes += n;
      ssd_[node]->Transfer(n, std::move(done));
    }
    return;
  }
  // First read here: from the cheapest holder, kept if this node's tiers take it.
  auto keep = [this, node, file, tier, done = std::move(done)]() mutable {
    if (tier != Tier::kNone && !held_[node][file]) Hold(node, file);
    done();
  };
  const int from = Holder(node, file);
  if (from < 0) {
    counters_.shared_fs_bytes += n;
    fs_->Transfer(n, std::move(keep), static_cast<int>(node));
    return;
  }
  counters_.peer_bytes += n;
  SharedDevice* link = link_[from].get();
  if (tier_[from][file] == Tier::kRam) {
    link->Transfer(n, std::move(keep));
  } else {
    ssd_[from]->Transfer(
        n, [link, n, keep = std::move(keep)]() mutable { link->Transfer(n, std::move(keep)); });
  }
}

}  // namespace clairfs::sim
