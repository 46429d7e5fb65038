// The planner tests' batch-mode job (planner_test_batch*.cpp): epochs known
// only as sets of batches (Keras fit(shuffle=True)), a planner over them, and
// the node simulator's settings for it.
#pragma once

#include <algorithm>
#include <catch2/catch.hpp>
#include <memory>
#include <numeric>
#include <random>
#include <vector>

#include "prefetch/keras/keras_flow.hpp"
#include "prefetch/planner/planner.hpp"
#include "tests/support/node_sim.hpp"

namespace clairfs::prefetch::testing {

namespace pf = clairfs::prefetch;
using pf::FileId;

// `files` files (index = file id) of random sizes; epoch e's candidates are a
// permutation drawn from e cut into batches of `batch`; epoch 0 may lead with
// batches read in a known order. Files at or past `files` exist but are in
// no batch.
struct BatchJob {
  uint64_t files = 96;
  uint64_t batch = 8;
  uint64_t lead = 0;   // epoch 0's lead batches (the first of epoch 0's)
  uint64_t reads = 0;  // 0: every candidate
  uint64_t extra_files = 0;
  std::vector<uint64_t> sizes;
  uint64_t total = 0;

  void Init() {
    std::mt19937_64 rng(11);
    for (uint64_t i = 0; i < files + extra_files; ++i) {
      sizes.push_back(std::uniform_int_distribution<uint64_t>(1024, 8 * 1024)(rng));
      if (i < files) total += sizes.back();
    }
  }
  uint64_t batches() const { return files / batch; }
  uint64_t Reads() const { return reads == 0 ? batches() : reads; }
  uint64_t MaxBatchBytes() const {
    uint64_t m = *std::max_element(sizes.begin(), sizes.begin() + static_cast<long>(files));
    return m * batch;
  }

  std::vector<std::vector<pf::Index>> Batches(uint64_t epoch) const {
    std::vector<pf::Index> perm(files);
    std::iota(perm.begin(), perm.end(), 0);
    std::mt19937_64 rng(1000 + epoch);
    std::shuffle(perm.begin(), perm.end(), rng);
    std::vector<std::vector<pf::Index>> out;
    for (uint64_t b = 0; b < batches(); ++b) {
      out.emplace_back(perm.begin() + static_cast<long>(b * batch),
                       perm.begin() + static_cast<long>((b + 1) * batch));
    }
    return out;
  }
  pf::BatchEpoch Epoch(uint64_t epoch) const {
    pf::BatchEpoch e;
    e.batches = Batches(epoch);
    e.reads = Reads();
    if (epoch == 0) {
      // Like Keras' spec batches: a different permutation's first batches.
      std::vector<std::vector<pf::Index>> pre = Batches(999);
      e.lead.assign(pre.begin(), pre.begin() + static_cast<long>(lead));
    }
    return e;
  }
  static std::vector<std::vector<FileId>> Files(const std::vector<std::vector<pf::Index>>& in) {
    std::vector<std::vector<FileId>> out;
    for (const auto& b : in) out.emplace_back(b.begin(), b.end());
    return out;
  }
  // What one reader opens in `epoch`, its batch order drawn from `seed`.
  std::vector<FileId> Reads(uint64_t epoch, uint64_t seed) const {
    pf::BatchEpoch e = Epoch(epoch);
    return pf::KerasFitReads(Files(e.lead), Files(e.batches), e.reads, seed);
  }
};

inline std::unique_ptr<pf::Planner> BatchPlanner(const BatchJob& job, std::vector<uint64_t> ranks,
                                                 uint64_t budget, uint64_t epochs,
                                                 const clairfs::Clock& clock,
                                                 uint64_t workers = 0) {
  pf::PlannerConfig c;
  c.local_ranks = std::move(ranks);
  c.end_epoch = epochs;
  c.batch_size = job.batch;
  c.num_workers = workers;
  c.budget_bytes = budget;
  pf::PlannerInput in;
  in.batches = [&job](uint64_t, uint64_t epoch) {
    return clairfs::Result<std::optional<pf::BatchEpoch>>(
        std::optional<pf::BatchEpoch>(job.Epoch(epoch)));
  };
  in.order = [&job](const std::vector<uint64_t>& ranks, uint64_t epoch) {
    // Batch-index order: a listing, not the read order (unused in batch mode).
    std::vector<pf::Index> all;
    for (const auto& b : job.Batches(epoch)) all.insert(all.end(), b.begin(), b.end());
    return clairfs::Result<std::vector<std::vector<pf::Index>>>(
        std::vector<std::vector<pf::Index>>(ranks.size(), all));
  };
  in.file_of_index.resize(job.files + job.extra_files);
  std::iota(in.file_of_index.begin(), in.file_of_index.end(), 0);
  in.file_size = pf::ShareSizes(job.sizes);
  auto p = pf::Planner::Create(c, in, clock);
  REQUIRE(p.ok());
  REQUIRE(p.value()->batch_mode());
  return std::move(p).value();
}

inline void RequireClean(const pf::NodeSimReport& r) {
  INFO(r.first_problem);
  REQUIRE(r.budget_violations == 0);
  REQUIRE(r.model_mismatches == 0);
}

inline pf::NodeSimOptions SimOptions(const BatchJob& job, uint64_t workers, uint64_t delay) {
  pf::NodeSimOptions o;
  o.loader.batch_size = job.batch;
  o.loader.num_workers = workers;
  o.loader.prefetch_factor = 2;
  o.fetch_delay_steps = delay;
  o.fetches_per_step = 16;
  return o;
}

// 8 files of 10 bytes in batches of 2, `epochs` epochs alike (default: one,
// the 4 batches {0,1} {2,3} {4,5} {6,7}, all read), no protection of recently
// opened files: only batch pins protect files.
inline pf::BatchEpoch FourBatches() {
  pf::BatchEpoch e;
  e.batches = {{0, 1}, {2, 3}, {4, 5}, {6, 7}};
  e.reads = 4;
  return e;
}

inline std::unique_ptr<pf::Planner> SmallPlanner(uint64_t budget, const clairfs::Clock& clock,
                                                 pf::BatchEpoch epoch = FourBatches(),
                                                 uint64_t epochs = 1) {
  pf::PlannerConfig c;
  c.local_ranks = {0};
  c.end_epoch = epochs;
  c.batch_size = 2;
  c.budget_bytes = budget;
  c.pin_recent_opens = 0;
  pf::PlannerInput in;
  in.batches = [epoch](uint64_t, uint64_t) {
    return clairfs::Result<std::optional<pf::BatchEpoch>>(std::optional<pf::BatchEpoch>(epoch));
  };
  in.order = [](const std::vector<uint64_t>&, uint64_t) {
    return clairfs::Result<std::vector<std::vector<pf::Index>>>(
        std::vector<std::vector<pf::Index>>{{0, 1, 2, 3, 4, 5, 6, 7}});
  };
  in.file_of_index = {0, 1, 2, 3, 4, 5, 6, 7};
  in.file_size = pf::ShareSizes(std::vector<uint64_t>(8, 10));
  auto created = pf::Planner::Create(c, in, clock);
  REQUIRE(created.ok());
  REQUIRE((*created)->batch_mode());
  return std::move(created).value();
}

}  // namespace clairfs::prefetch::testing
