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
  if (spec.prefetcher && spec.prefetch_threads == 0) {
    return Status::InvalidArgument("NoPFS's prefetcher needs at least one thread");
  }
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
  // The loader's accesses of each epoch, as the job cuts them: its steps are
  // the fewest batches of any rank.
  s->ranks_per_node_ = job.ranks_per_node;
  s->decode_seconds_ = job.file_seconds;
  s->stagers_.resize(static_cast<size_t>(job.nodes) * job.ranks_per_node);
  s->staged_ids_.resize(job.nodes);
  for (uint32_t e = 0; e < job.epochs; ++e) {
    uint64_t steps = UINT64_MAX;
    for (uint32_t n = 0; n < job.nodes; ++n) {
      for (uint32_t g = 0; g < job.ranks_per_node; ++g) {
        const uint64_t size = r.Order(n, e, g).size();
        const uint64_t batches =
            job.drop_last ? size / job.batch_size : (size + job.batch_size - 1) / job.batch_size;
        steps = std::min(steps, batches);
      }
    }
    s->reads_per_epoch_.push_back(steps * job.batch_size);
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

void NopfsSource::Fetch(uint32_t node, uint64_t file, prefetch::FileId c, SourceCounters* count,
                        EventLoop::Fn done) {
  const uint64_t n = (*bytes_)[file];
  count->reads++;
  const Tier tier = c == prefetch::kNoFile ? Tier::kNone : tier_[node][c];
  if (c != prefetch::kNoFile && held_[node][c]) {
    if (tier == Tier::kRam) {
      count->ram_bytes += n;
      loop_->After(0, std::move(done));
    } else {
      count->local_bytes += n;
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
    count->shared_fs_bytes += n;
    fs_->Transfer(n, std::move(keep), static_cast<int>(node));
    return;
  }
  count->peer_bytes += n;
  SharedDevice* link = link_[from].get();
  if (TierOf(static_cast<uint32_t>(from), file) == Tier::kRam) {
    link->Transfer(n, std::move(keep));
  } else {
    ssd_[from]->Transfer(
        n, [link, n, keep = std::move(keep)]() mutable { link->Transfer(n, std::move(keep)); });
  }
}

void NopfsSource::Read(uint32_t node, uint64_t file, EventLoop::Fn done) {
  // A file the node's orders do not name (a caller's own read) is kept in no
  // tier and staged by no prefetcher.
  const prefetch::FileId c = reads_.Find(node, file);
  if (!spec_.prefetcher || c == prefetch::kNoFile) {
    Fetch(node, file, c, &counters_, std::move(done));
    return;
  }
  counters_.reads++;
  uint64_t id = FindStaged(node, c, epoch_, true);
  if (id == 0) {
    // Ahead of the rank's prefetcher: wait until it has fetched the access.
    id = next_id_++;
    staged_[id] = Staged{.epoch = epoch_, .waiter = std::move(done)};
    staged_ids_[node][c].push_back(id);
    return;
  }
  Staged& s = staged_.at(id);
  if (s.ready) return Take(id, node, c, std::move(done));
  s.waiter = std::move(done);
}

void NopfsSource::Launch() {
  if (!spec_.prefetcher) return;
  for (uint64_t r = 0; r < stagers_.size(); ++r) Pump(r);
}

void NopfsSource::StartEpoch(uint32_t epoch) { epoch_ = epoch; }

uint64_t NopfsSource::FindStaged(uint32_t node, uint32_t c, uint32_t epoch, bool loader) const {
  auto it = staged_ids_[node].find(c);
  if (it == staged_ids_[node].end()) return 0;
  for (uint64_t id : it->second) {
    const Staged& s = staged_.at(id);
    if (s.epoch == epoch && (loader ? !s.waiter : s.rank < 0)) return id;
  }
  return 0;
}

void NopfsSource::Take(uint64_t id, uint32_t node, uint32_t c, EventLoop::Fn done) {
  const auto r = static_cast<uint64_t>(staged_.at(id).rank);
  const uint64_t file = reads_.Files(node)[c];
  counters_.ram_bytes += (*bytes_)[file];
  stagers_[r].used -= StagedBytes(file);
  staged_.erase(id);
  auto it = staged_ids_[node].find(c);
  std::erase(it->second, id);
  if (it->second.empty()) staged_ids_[node].erase(it);
  loop_->After(0, std::move(done));
  Pump(r);
}

void NopfsSource::Pump(uint64_t r) {
  Stager& st = stagers_[r];
  const auto node = static_cast<uint32_t>(r / ranks_per_node_);
  const auto g = static_cast<uint32_t>(r % ranks_per_node_);
  while (st.busy < spec_.prefetch_threads && st.epoch < reads_per_epoch_.size()) {
    const std::vector<uint32_t>& order = reads_.Order(node, st.epoch, g);
    if (st.next >= std::min<uint64_t>(order.size(), reads_per_epoch_[st.epoch])) {
      // NoPFS's threads start the next epoch together, once the last fetch
      // of this one is done.
      if (st.busy > 0) return;
      st.epoch++;
      st.next = 0;
      continue;
    }
    const uint32_t c = order[st.next];
    const uint64_t file = reads_.Files(node)[c];
    const uint64_t n = StagedBytes(file);
    if (st.used > 0 && st.used + n > spec_.staging_bytes) return;
    st.next++;
    st.busy++;
    st.used += n;
    uint64_t id = FindStaged(node, c, st.epoch, false);
    if (id == 0) {
      id = next_id_++;
      staged_[id].epoch = st.epoch;
      staged_ids_[node][c].push_back(id);
    }
    staged_.at(id).rank = static_cast<int64_t>(r);
    auto staged = [this, r, id, node, c] {
      stagers_[r].busy--;
      Staged& s = staged_.at(id);
      s.ready = true;
      if (s.waiter) return Take(id, node, c, std::move(s.waiter));
      Pump(r);
    };
    Fetch(node, file, c, &prefetched_, [this, staged = std::move(staged)]() mutable {
      if (decode_seconds_ <= 0) return staged();
      loop_->After(decode_seconds_, std::move(staged));
    });
  }
}

}  // namespace clairfs::sim
