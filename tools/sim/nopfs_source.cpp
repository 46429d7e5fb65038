#include "tools/sim/nopfs_source.hpp"

#include <algorithm>
#include <numeric>
#include <utility>

namespace clairfs::sim {

NopfsSource::NopfsSource(EventLoop* loop, SharedDevice* shared_fs,
                         const std::vector<uint64_t>* file_bytes, const NopfsSpec& spec,
                         NodeReads reads)
    : loop_(loop), fs_(shared_fs), bytes_(file_bytes), spec_(spec), reads_(std::move(reads)) {
  const uint32_t nodes = reads_.nodes();
  tier_.resize(nodes);
  held_.resize(nodes);
  for (uint32_t n = 0; n < nodes; ++n) {
    tier_[n].assign(reads_.Files(n).size(), Tier::kNone);
    held_[n].assign(reads_.Files(n).size(), 0);
  }
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
  auto reads = NodeReads::Build(sampler, job);
  if (!reads.ok()) return reads.status();
  std::unique_ptr<NopfsSource> s(
      new NopfsSource(loop, shared_fs, file_bytes, spec, std::move(reads).value()));
  const NodeReads& r = s->reads_;
  for (uint32_t n = 0; n < job.nodes; ++n) {
    // Accesses over the whole job, and when each file is first read, by
    // compact id: the node's own files, which are all it reads.
    const std::vector<uint32_t>& files = r.Files(n);
    std::vector<uint64_t> count(files.size(), 0), first(files.size(), UINT64_MAX);
    uint64_t at = 0;
    for (uint32_t e = 0; e < job.epochs; ++e) {
      for (uint32_t g = 0; g < job.ranks_per_node; ++g) {
        for (uint32_t c : r.Order(n, e, g)) {
          count[c]++;
          first[c] = std::min(first[c], at++);
        }
      }
    }
    // Every file here is read, and at a position of its own: (count, first)
    // orders them as over the whole dataset.
    std::vector<uint32_t> by(files.size());
    std::iota(by.begin(), by.end(), 0u);
    std::sort(by.begin(), by.end(), [&](uint32_t a, uint32_t b) {
      return count[a] != count[b] ? count[a] > count[b] : first[a] < first[b];
    });
    uint64_t ram = spec.ram_bytes, ssd = spec.ssd_bytes;
    for (uint32_t c : by) {
      const uint64_t b = (*file_bytes)[files[c]];
      if (b <= ram) {
        s->tier_[n][c] = Tier::kRam;
        ram -= b;
      } else if (b <= ssd) {
        s->tier_[n][c] = Tier::kSsd;
        ssd -= b;
      }
    }
  }
  return s;
}

NopfsSource::Tier NopfsSource::TierOf(uint32_t node, uint64_t file) const {
  const prefetch::FileId c = reads_.Find(node, file);
  return c == prefetch::kNoFile ? Tier::kNone : tier_[node][c];
}

int NopfsSource::Holder(uint32_t node, uint64_t file) const {
  const auto& [first, second] = holders_[file];
  const uint32_t n = first != node ? first : second;
  return n == kNobody ? -1 : static_cast<int>(n);
}

void NopfsSource::Hold(uint32_t node, uint64_t file, prefetch::FileId c) {
  // A node keeps a file once (nothing is evicted): an insertion into the two
  // lowest, kNobody sorting last.
  held_[node][c] = 1;
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
  // A file the node's orders do not name (a caller's own read) is kept in no tier.
  const prefetch::FileId c = reads_.Find(node, file);
  const Tier tier = c == prefetch::kNoFile ? Tier::kNone : tier_[node][c];
  if (c != prefetch::kNoFile && held_[node][c]) {
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
  auto keep = [this, node, file, c, tier, done = std::move(done)]() mutable {
    if (tier != Tier::kNone && !held_[node][c]) Hold(node, file, c);
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
  if (TierOf(static_cast<uint32_t>(from), file) == Tier::kRam) {
    link->Transfer(n, std::move(keep));
  } else {
    ssd_[from]->Transfer(
        n, [link, n, keep = std::move(keep)]() mutable { link->Transfer(n, std::move(keep)); });
  }
}

}  // namespace clairfs::sim
