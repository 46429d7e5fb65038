// tf.data's shuffle, exactly: the buffer algorithm, the per-dataset seed
// generator that gives every new iterator its seeds, and how many iterators
// each training driver creates.
//
// Rules, and where they come from:
// - tensorflow/core/kernels/data/shuffle_dataset_op.cc (TF 2.15 and 2.21
//   behave the same; checked against both): an iterator fills a buffer of
//   `buffer_size` elements from its input, then per output draws one 32-bit
//   word w from Philox(seed, seed2) (TfPhiloxWords), emits slot
//   (start + w % count) mod buffer_size, moves slot `start` into the hole,
//   start++ and refills one element at the end. Buffers larger than the input
//   behave like a buffer of exactly the input size.
// - tensorflow/core/kernels/data/random_seed_ops.cc: with
//   reshuffle_each_iteration the dataset owns a RandomSeedGenerator keyed by
//   the dataset's (seed, seed2); iterator k of the dataset object gets words
//   2k and 2k+1 of it as its (seed, seed2). Without reshuffling
//   (FixedSeedGenerator) every iterator gets the dataset's own seeds. The
//   generator belongs to the dataset object, so every iterator created on it -
//   training, validation, discarded - moves it on.
// - shuffle followed by repeat(count) is rewritten into ShuffleAndRepeat
//   (grappler shuffle_and_repeat_fusion): the iterator draws a fresh pair from
//   the generator each time it starts emitting the next pass (ClearEmptySlices
//   in shuffle_dataset_op.cc), so its passes look like successive iterators. A
//   repeat that is not fused (a shard between) creates a new shuffle iterator
//   per pass (repeat_dataset_op.cc) and one more after the last pass. repeat
//   before shuffle is one iterator over the repeated input. Verified against
//   TF 2.15.1 and 2.21.0.
// Pure functions and an immutable Sampler; thread-safe.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "base/status.hpp"
#include "prefetch/order/sampler.hpp"
#include "prefetch/tf/tf_seed.hpp"

namespace clairfs::prefetch {

// One shuffle iterator with seeds `seeds` over `input`: its first
// `max_out` outputs (all when max_out >= input.size()). Output j depends only
// on the first j + buffer_size inputs, so a long enough prefix of an endless
// input gives an exact prefix of its shuffle.
std::vector<Index> TfShuffleIterator(const std::vector<Index>& input, uint64_t buffer_size,
                                     TfSeeds seeds, uint64_t max_out = UINT64_MAX);

// The seeds of iterator `k` (0-based, in creation order) of a dataset whose
// shuffle has `dataset_seeds`.
TfSeeds TfIteratorSeeds(TfSeeds dataset_seeds, bool reshuffle_each_iteration, uint64_t k);

// Who iterates the dataset, which decides how many iterators exist.
enum class TfDriver {
  kLoop,       // `for epoch in range(E): for x in ds:` - iterator e in epoch e
  kKeras3Fit,  // Keras 3 model.fit (keras/src/trainers/epoch_iterator.py)
  kKeras2Fit,  // tf.keras 2.x model.fit (keras/engine/data_adapter.py DataHandler)
};
Result<TfDriver> ParseTfDriver(std::string_view name);  // loop, keras3-fit, keras2-fit
std::string_view TfDriverName(TfDriver driver);

// One read of a pass: batches [first_batch, first_batch + batches) of the
// dataset's iterator `iterator`.
struct TfRead {
  uint64_t iterator = 0;
  uint64_t first_batch = 0;
  uint64_t batches = 0;
};

struct TfDriverOptions {
  TfDriver driver = TfDriver::kLoop;
  uint64_t num_batches = 0;      // batches of one iterator; 0 = endless (.repeat())
  uint64_t steps_per_epoch = 0;  // fit(steps_per_epoch=); 0 = None
  bool validation_same = false;  // fit(validation_data=<the same dataset object>)
};

// What a driver does to the dataset object, in time order: create iterator
// `read.iterator`, or read batches of it. Iterators are numbered in creation
// order. Events of epochs 0 .. last_epoch.
struct TfEvent {
  enum Kind { kCreate, kRead } kind = kRead;
  uint64_t epoch = 0;
  TfRead read;
};
Result<std::vector<TfEvent>> TfDriverEvents(const TfDriverOptions& options, uint64_t last_epoch);

// The reads of epoch `epoch`: the training pass, then (validation_same) the
// validation pass. InvalidArgument / Unsupported for combinations that never
// end or are not modelled (the message names them).
Result<std::vector<TfRead>> TfEpochReads(const TfDriverOptions& options, uint64_t epoch);

}  // namespace clairfs::prefetch
