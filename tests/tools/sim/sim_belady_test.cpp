// clairfs's policy in the simulator against Belady's offline optimum, worked
// out here on its own, on the stream of reads each run really made, with
// every device unlimited (a fetch takes no time).
//
// What holds, and what does not (docs/simulation.md, "The planner against
// Belady"): every read is served from RAM, above Belady's MIN hit ratio
// (MIN is the optimum of a cache that loads a file only when it is read: its
// first read of each file is a miss, while a prefetcher with bandwidth to
// spare has it there). The optimum for a prefetcher with free fetches is then
// the fewest loads that leave every read a hit, which is MIN's miss count;
// the planner loads more, because it prefetches eagerly (DESIGN.md: fetch a
// file as soon as its next use is sooner than that of the file it would
// evict), choosing victims before the reads that would show a better one. Its
// loads equal, exactly, that eager rule played offline here.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "prefetch/torch/distributed_sampler.hpp"
#include "tools/sim/clairfs_source.hpp"
#include "tools/sim/job.hpp"

using namespace clairfs;
using namespace clairfs::sim;

namespace {

// Forwards to a source, keeping each node's reads in the order they came.
class Recorder final : public DataSource {
 public:
  Recorder(DataSource* inner, uint32_t nodes) : inner_(inner), reads(nodes) {}
  void StartEpoch(uint32_t epoch) override { inner_->StartEpoch(epoch); }
  void Read(uint32_t node, uint64_t file, EventLoop::Fn done) override {
    reads[node].push_back(file);
    inner_->Read(node, file, std::move(done));
  }

 private:
  DataSource* inner_;

 public:
  std::vector<std::vector<uint64_t>> reads;
};

// Belady's MIN on `stream` with room for `capacity` files of one size: the
// accesses that must load their file (the first of each file, and each one
// after the optimal policy let it go). A missed file is kept only when its
// next use is sooner than that of the file it would evict (bypass otherwise),
// which never costs a load. O(n log n).
uint64_t BeladyLoads(const std::vector<uint64_t>& stream, uint64_t capacity) {
  constexpr uint64_t kNever = UINT64_MAX;
  std::vector<uint64_t> next(stream.size(), kNever);
  std::map<uint64_t, uint64_t> later;  // file -> position of its next access
  for (uint64_t i = stream.size(); i-- > 0;) {
    auto it = later.find(stream[i]);
    next[i] = it == later.end() ? kNever : it->second;
    later[stream[i]] = i;
  }
  std::set<std::pair<uint64_t, uint64_t>> cached;  // (next use, file)
  std::map<uint64_t, uint64_t> key;                // file -> its next use in `cached`
  uint64_t loads = 0;
  for (uint64_t i = 0; i < stream.size(); ++i) {
    const uint64_t f = stream[i];
    auto k = key.find(f);
    if (k != key.end()) {
      cached.erase({k->second, f});
      cached.insert({next[i], f});
      k->second = next[i];
      continue;
    }
    ++loads;
    if (capacity == 0 || next[i] == kNever) continue;
    if (cached.size() == capacity) {
      auto furthest = std::prev(cached.end());
      if (furthest->first <= next[i]) continue;  // the new file is the one to let go
      key.erase(furthest->second);
      cached.erase(furthest);
    }
    cached.insert({next[i], f});
    key[f] = next[i];
  }
  return loads;
}

// The planner's rule (DESIGN.md: prefetch a file when its next use is sooner
// than that of the file it would evict), played offline with fetches that
// take no time: before each access, and again after it, the non-resident file
// used soonest is loaded while there is room or a resident file is used
// later than it (that one goes: the furthest). The files of the last `pinned`
// accesses are not evicted (the planner's pin_recent_opens). Returns the
// loads; counts the accesses that found their file in *hits.
uint64_t EagerLoads(const std::vector<uint64_t>& stream, uint64_t capacity, uint64_t pinned,
                    uint64_t* hits) {
  constexpr uint64_t kNever = UINT64_MAX;
  // Each file's accesses, in order; a file's next use from position i is
  // the first of them at or after i.
  std::map<uint64_t, std::vector<uint64_t>> at;
  for (uint64_t i = 0; i < stream.size(); ++i) at[stream[i]].push_back(i);
  auto next_use = [&](uint64_t f, uint64_t i) {
    const auto& v = at[f];
    auto it = std::lower_bound(v.begin(), v.end(), i);
    return it == v.end() ? kNever : *it;
  };
  std::set<uint64_t> resident;
  std::vector<uint64_t> recent;  // the last `pinned` accesses' files
  uint64_t loads = 0;
  *hits = 0;
  auto fill = [&](uint64_t i) {  // before access i
    for (;;) {
      uint64_t want = kNever, want_at = kNever;
      for (const auto& [f, v] : at) {
        const uint64_t n = next_use(f, i);
        if (resident.count(f) == 0 && n < want_at) want = f, want_at = n;
      }
      if (want == kNever) return;
      if (resident.size() >= capacity) {
        uint64_t victim = kNever, victim_at = 0;
        for (uint64_t f : resident) {
          if (std::find(recent.begin(), recent.end(), f) != recent.end()) continue;
          const uint64_t n = next_use(f, i);
          if (victim == kNever || n > victim_at) victim = f, victim_at = n;
        }
        if (victim == kNever || victim_at <= want_at) return;
        resident.erase(victim);
      }
      resident.insert(want);
      ++loads;
    }
  };
  for (uint64_t i = 0; i < stream.size(); ++i) {
    fill(i);
    if (resident.count(stream[i]) != 0) ++*hits;
    recent.push_back(stream[i]);
    if (recent.size() > pinned) recent.erase(recent.begin());
  }
  return loads;
}

struct Outcome {
  uint64_t reads = 0, ram_reads = 0, loads = 0, belady = 0, eager = 0, eager_hits = 0;
};

// Runs clairfs on unlimited devices: `files` files of 1000 B, RAM for
// `capacity` of them; returns node 0's counts.
Outcome Run(const JobSpec& job, uint64_t files, uint64_t capacity) {
  REQUIRE(job.nodes == 1);  // the source's counts are then the one node's
  const std::vector<uint64_t> bytes(files, 1000);
  prefetch::DistributedSamplerOptions o;
  o.num_replicas = static_cast<uint64_t>(job.nodes) * job.ranks_per_node;
  o.seed = 7;
  auto sampler = prefetch::DistributedSampler::Create(files, o);
  REQUIRE(sampler.ok());
  EventLoop loop;
  SharedDevice fs(&loop, DeviceSpec{});
  ClairfsSpec spec{.partitions = 1, .ram_bytes = capacity * 1000, .fetch_slots = 8, .node = {}};
  auto source = ClairfsSource::Create(&loop, &fs, &bytes, *sampler, job, spec);
  REQUIRE(source.ok());
  Recorder recorder(source->get(), job.nodes);
  REQUIRE(RunJob(&loop, job, *sampler, &recorder).ok());
  const SourceCounters& c = (*source)->counters();
  const SourceCounters& p = (*source)->prefetched();
  Outcome out;
  out.reads = c.reads;
  out.ram_reads = c.ram_bytes / 1000;
  // Every byte that came into the node: the prefetches and the demand reads.
  out.loads = p.reads + (c.reads - out.ram_reads);
  out.belady = BeladyLoads(recorder.reads[0], capacity);
  out.eager = EagerLoads(recorder.reads[0], capacity, 4 * job.ranks_per_node * job.workers,
                         &out.eager_hits);
  REQUIRE(recorder.reads[0].size() == c.reads);
  return out;
}

}  // namespace

TEST_CASE("the test's references count loads as worked out by hand", "[sim]") {
  // a b c a b d a b, room for 2: a b load; c loads and is let go (next use
  // none); a b hit; d loads and is let go; a b hit: 4 loads.
  CHECK(BeladyLoads({0, 1, 2, 0, 1, 3, 0, 1}, 2) == 4);
  // a b c b c a, room for 2: a, b load; c loads and evicts a (used at 5,
  // after b at 3 and c at 4); b, c hit; a loads again: 4. Room for 3: 3.
  CHECK(BeladyLoads({0, 1, 2, 1, 2, 0}, 2) == 4);
  CHECK(BeladyLoads({0, 1, 2, 1, 2, 0}, 3) == 3);
  CHECK(BeladyLoads({0, 0, 0}, 0) == 3);

  // a b a c b, room for 2. MIN: a, b load; c loads and is let go (no next
  // use): 3. Eager: a, b load; before the second a, c (next use 3) takes b's
  // place (next use 4, the furthest then); after it, b (4) takes a's (never
  // used again): 4 loads, every read a hit.
  uint64_t hits = 0;
  CHECK(BeladyLoads({0, 1, 0, 2, 1}, 2) == 3);
  CHECK(EagerLoads({0, 1, 0, 2, 1}, 2, 0, &hits) == 4);
  CHECK(hits == 5);
  // The last read's file pinned: before the second a, b (just read) cannot
  // go, and a is used before c; c comes one read later, in b's place, then b
  // in a's: the same 4 loads, every read a hit.
  CHECK(EagerLoads({0, 1, 0, 2, 1}, 2, 1, &hits) == 4);
  CHECK(hits == 5);
  // Room for everything: each file once.
  CHECK(EagerLoads({0, 1, 0, 2, 1}, 3, 1, &hits) == 3);
  CHECK(hits == 5);
}

TEST_CASE("clairfs with unlimited bandwidth: every read from RAM, above Belady's MIN hit ratio",
          "[sim]") {
  JobSpec job{.nodes = 1,
              .ranks_per_node = 1,
              .batch_size = 1,
              .compute_seconds = 0.01,
              .epochs = 4,
              .workers = 1,
              .prefetch_factor = 1};
  for (uint64_t capacity : {5, 20, 45, 59, 60}) {
    const Outcome o = Run(job, 60, capacity);
    INFO("room for " << capacity << " of 60 files: " << o.reads << " reads, " << o.ram_reads
                     << " from RAM; MIN's hits " << o.reads - o.belady);
    CHECK(o.reads == 240);
    CHECK(o.ram_reads == o.reads);
    CHECK(o.reads - o.belady < o.ram_reads);  // MIN misses each file's first read at least
  }
}

TEST_CASE("clairfs with unlimited bandwidth: the planner's loads are its eager rule's, not MIN's",
          "[sim]") {
  struct Case {
    JobSpec job;
    uint64_t capacity;
  };
  const JobSpec one{.nodes = 1,
                    .ranks_per_node = 1,
                    .batch_size = 1,
                    .compute_seconds = 0.01,
                    .epochs = 4,
                    .workers = 1,
                    .prefetch_factor = 1};
  // Two ranks of two workers: the reads interleave as the loaders make them.
  // Not below the loaders' read-ahead (20 files here): with less room, files
  // the loaders open wait and are read on demand, which the offline rule does
  // not model (room for 12: 129 of 180 reads from RAM, 173 loads against the
  // rule's 124). The planner warns of any room below twice the read-ahead.
  const JobSpec two{.nodes = 1,
                    .ranks_per_node = 2,
                    .batch_size = 2,
                    .compute_seconds = 0.01,
                    .epochs = 3,
                    .workers = 2,
                    .prefetch_factor = 2};
  for (const Case& c : {Case{one, 5}, Case{one, 20}, Case{one, 45}, Case{one, 59}, Case{one, 60},
                        Case{two, 30}, Case{two, 50}, Case{two, 60}}) {
    const Outcome o = Run(c.job, 60, c.capacity);
    INFO(c.job.ranks_per_node << " rank(s), room for " << c.capacity << " of 60 files: " << o.reads
                              << " reads, " << o.ram_reads << " from RAM, " << o.loads
                              << " loads; MIN " << o.belady << ", the eager rule " << o.eager
                              << " (" << o.eager_hits << " hits)");
    CHECK(o.ram_reads == o.reads);
    CHECK(o.loads == o.eager);
    CHECK(o.eager_hits == o.reads);
    if (c.capacity < 60) {
      CHECK(o.loads > o.belady);  // the cost of choosing victims early
    } else {
      CHECK(o.loads == 60);  // room for all: each file once, as MIN
      CHECK(o.belady == 60);
    }
  }
}
