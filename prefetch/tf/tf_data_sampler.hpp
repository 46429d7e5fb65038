// TfDataSampler: the exact element order of a seeded tf.data pipeline whose
// only reordering is one Dataset.shuffle (or list_files' built-in shuffle),
// optionally sharded before or after it, repeated after it (each pass a new
// shuffle; sharding per pass) or before it (one shuffle over the repeated
// input; sharding over its output), batched, and driven by a loop or a Keras
// fit (tf_shuffle.hpp has the rules and their sources).
//
// Dataset index i = the i-th element entering the pipeline (for list_files
// the i-th byte-sorted match; for image_dataset_from_directory the i-th path
// of the Keras listing). Rank = shard index, world size = number of shards:
// every worker runs the same pipeline with the same seeds and keeps its shard.
// Order(rank, epoch) = the elements that epoch's reads yield - the training
// pass, then the validation pass when validation_data is the same object.
// Immutable; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "base/status.hpp"
#include "prefetch/order/sampler.hpp"
#include "prefetch/tf/tf_seed.hpp"
#include "prefetch/tf/tf_shuffle.hpp"

namespace clairfs::prefetch {

struct TfDataOptions {
  TfSeedInput seed;     // shuffle's seed= and tf.random.set_seed
  bool shuffle = true;  // list_files(shuffle=False) / no shuffle op
  bool reshuffle_each_iteration = true;
  uint64_t buffer_size = 0;            // 0 = all elements (list_files' buffer)
  uint64_t num_shards = 1;             // shard(num_shards, index); index = rank
  bool shard_before_shuffle = false;   // .shard(n, i).shuffle(...) instead of after
  uint64_t repeat = 1;                 // .repeat(R) after the shuffle; 0 = .repeat()
  bool repeat_before_shuffle = false;  // .repeat(R).shuffle(...) instead
  bool repeat_fusion = true;           // options: shuffle_and_repeat_fusion (default on)
  uint64_t batch_size = 0;             // .batch(b) (drop_remainder=False); 0 = none
  TfDriver driver = TfDriver::kLoop;
  uint64_t steps_per_epoch = 0;  // fit(steps_per_epoch=); 0 = None
  bool validation_same = false;  // fit(validation_data=<same dataset>)
  std::string glob;              // tf-list-files: pattern relative to the root
};

class TfDataSampler final : public Sampler {
 public:
  // InvalidArgument for a shuffle without any seed (names the fix), a zero
  // shard count, or settings the driver does not take.
  static Result<TfDataSampler> Create(uint64_t dataset_size, const TfDataOptions& options);

  uint64_t world_size() const override { return options_.num_shards; }
  uint64_t dataset_size() const override { return size_; }
  Result<std::vector<Index>> Order(uint64_t rank, uint64_t epoch) const override;

  // Elements [from, to) an iterator of rank `rank`'s dataset yields (fewer
  // when it ends before); pass p of it shuffles with the seeds of the
  // generator's pair pass_pairs[p] (one pair in all when the repeat is before
  // the shuffle).
  std::vector<Index> IteratorElements(uint64_t rank, const std::vector<uint64_t>& pass_pairs,
                                      uint64_t from, uint64_t to) const;

  // Elements one iterator yields for `rank`; 0 when it never ends.
  uint64_t IteratorLength(uint64_t rank) const;

 private:
  std::vector<Index> ShardedInput(uint64_t rank) const;

  TfDataSampler(uint64_t size, TfDataOptions options, TfSeeds seeds)
      : size_(size), options_(std::move(options)), seeds_(seeds) {}

  uint64_t size_;
  TfDataOptions options_;
  TfSeeds seeds_;
};

}  // namespace clairfs::prefetch
