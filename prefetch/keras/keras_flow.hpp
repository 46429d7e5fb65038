// KerasFlow: the read order of ImageDataGenerator.flow_from_directory (the
// DirectoryIterator of keras/src/legacy/preprocessing/image.py in Keras 3 and
// keras/src/preprocessing/image.py in tf.keras 2.15; same logic in both).
//
// Listing (DirectoryIterator.__init__, _list_valid_filenames_in_directory,
// _iter_valid_files): classes = `classes` as given, else the root's entries
// that are directories (symlinks followed, dot folders included) sorted; each
// walked with os.walk(followlinks=follow_links), sorted by directory, files
// sorted, kept when the lower-cased name ends in png jpg jpeg bmp ppm tif tiff
// (no dot: "xpng" counts); with a subset each class keeps
// files[int(a*n):int(b*n)], (0, split) for validation, (split, 1) training.
//
// Order (Iterator): batch k of an epoch is index_array[k*B:(k+1)*B]; with a
// seed every batch first calls np.random.seed(seed + total_batches_seen), and
// index_array = np.random.permutation(n) (arange without shuffle) is drawn:
// - `next(it)` (_flow_index): at the first batch of every epoch, right after
//   the reseed with seed + epoch * len(it);
// - model.fit (__getitem__ + on_epoch_end): at the first __getitem__ (after
//   the reseed with `seed`), then in on_epoch_end after the epoch's last
//   __getitem__ - whose reseed and per-image augmentation draws
//   (get_random_transform, counted by KerasFlowAugment) precede it. Keras 3 fit
//   (py_dataset_adapter.py get_tf_dataset) reads batches 0 and 1 once for the
//   tensor spec, tf.keras 2.15 (data_adapter.py KerasSequenceAdapter) batch 0.
//   fit(shuffle=True) (the default) runs each epoch's batches in an order from
//   Python's `random`: the batch order is unknowable, the batches are exact.
// - model.fit(steps_per_epoch=S), S < len(it) (keras_flow_steps.cpp): tf.keras
//   2.15 starts a new pass over the batches every epoch (data_adapter.py
//   KerasSequenceAdapter.should_recreate_iterator) and trains on its first S;
//   Keras 3 keeps one pass across epochs (epoch_iterator.py
//   EpochIterator._enumerate_iterator) and cuts it into epochs of S, the last
//   one shorter. Both call on_epoch_end every epoch while tf.data's prefetch
//   may already have read batches ahead, so a permutation drawn mid-pass
//   depends on a count of reads that is a race: EpochPermutations gives the
//   candidates, PermutationAfter the one for an observed count.
// Immutable after Create; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.hpp"
#include "prefetch/keras/keras_listing.hpp"
#include "prefetch/order/dataset_index.hpp"
#include "prefetch/order/listing.hpp"
#include "prefetch/order/sampler.hpp"
#include "prefetch/rng/numpy_random.hpp"

namespace clairfs::prefetch {

// The ImageDataGenerator options that draw from NumPy's global generator, and
// how (ImageDataGenerator.get_random_transform, in this order): rotation,
// height shift, width shift, shear: one uniform each when non-zero; a shift
// given as an int or list draws choice(range) then choice([-1, 1]) instead;
// zoom: uniform(size=2) unless [1, 1]; the two flips: one random() each,
// ALWAYS, whatever the flip flags; channel shift when non-zero and
// brightness when given: one uniform each.
struct KerasFlowAugment {
  enum class Shift { kNone, kUniform, kChoice };
  bool rotation = false;
  Shift height_shift = Shift::kNone;
  uint64_t height_choices = 0;  // kChoice: the population size
  Shift width_shift = Shift::kNone;
  uint64_t width_choices = 0;
  bool shear = false;
  bool zoom = false;
  bool channel_shift = false;
  bool brightness = false;

  // "rotation_range=10,width_shift_range=0.1,zoom_range=0.8:1.2,..."; values
  // with ':' are lists. Names are ImageDataGenerator's keyword arguments;
  // InvalidArgument naming the key for anything else.
  static Result<KerasFlowAugment> Parse(std::string_view text);
  // The draws of one get_random_transform call.
  void Draw(NumpyRandomState& rng) const;
  // The same draws as separate NumPy calls (each atomic under NumPy's lock;
  // another thread may run between two of them).
  struct Call {
    enum class Kind { kDouble, kTwoDoubles, kChoice } kind = Kind::kDouble;
    uint64_t population = 0;  // kChoice
  };
  std::vector<Call> Calls() const;
  static void DrawCall(const Call& call, NumpyRandomState& rng);
};

struct KerasFlowOptions {
  KerasVersion version{};
  std::optional<uint64_t> seed;  // flow_from_directory(seed=); required to shuffle
  bool shuffle = true;           // flow_from_directory(shuffle=)
  uint64_t batch_size = 32;
  std::optional<std::vector<std::string>> classes;
  bool follow_links = false;
  double validation_split = 0;  // ImageDataGenerator(validation_split=)
  enum class Subset { kNone, kTraining, kValidation } subset = Subset::kNone;
  KerasFlowAugment augment;
  enum class Protocol { kNext, kFit } protocol = Protocol::kNext;
  bool fit_shuffle = true;  // model.fit(shuffle=) (its default: True)
  // model.fit(validation_data=...) with the same generator's
  // flow_from_directory(subset="validation", seed=this, same batch size,
  // shuffle=True). tf.keras 2.15 runs validation before the training
  // on_epoch_end, so its reseeds and draws come first; Keras 3 after.
  std::optional<uint64_t> fit_validation_seed;
  // model.fit(steps_per_epoch=); 0: not given (an epoch is len(it) batches).
  // --protocol fit only, at most len(it), not with fit_validation_seed.
  uint64_t steps_per_epoch = 0;
};

// The DirectoryIterator's filenames as a DatasetIndex. NotFound when no image.
Result<DatasetIndex> KerasFlowListing(const Listing& listing, const KerasFlowOptions& options);

class KerasFlow final : public Sampler {
 public:
  // InvalidArgument for bad options, including shuffle without a seed (the
  // global NumPy state is unknowable) with the one-line fix in the message.
  static Result<KerasFlow> Create(const Listing& listing, const KerasFlowOptions& options);

  const DatasetIndex& index() const { return index_; }
  uint64_t batches_per_epoch() const;  // len(it)
  // False when the batches of an epoch run in an unknowable order (fit with
  // shuffle=True): then only the set of files per batch is exact.
  bool batch_order_exact() const;

  // The batches epoch `epoch` can read, as dataset indices: for each
  // candidate index array (EpochPermutations, in its order) the slices at
  // EpochBatchPositions; the up to ReadAhead(epoch) batches tf.data reads
  // ahead are the slices at the pass's next positions (Keras 3: they are
  // trained on in the next epoch, sliced from this epoch's array). Exact -
  // BatchReads(epoch) batches in read order - when there is one candidate and
  // batch_order_exact(). InvalidArgument when the candidates are more than
  // kMaxCandidatePermutations.
  Result<std::vector<std::vector<Index>>> EpochBatches(uint64_t epoch) const;

  // --- the batch as unit (for the planner) ---
  // The index arrays (np.random.permutation(n) of the DirectoryIterator) one
  // of which is in effect while epoch `epoch` reads: from the on_epoch_end
  // that drew it to the next. One when exact. A permutation drawn after a
  // racing read-ahead or an unknown last batch has several (the draw counts
  // are in EpochDraws); beyond kMaxCandidatePermutations, InvalidArgument.
  // A racing read may also slice np.arange(n): Iterator._set_index_array
  // assigns it before drawing the permutation, so raced epochs end their
  // list with it.
  Result<std::vector<std::vector<Index>>> EpochPermutations(uint64_t epoch) const;
  // Batches epoch `epoch` trains on (model.fit steps): len(it) without
  // steps_per_epoch; tf.keras 2: S; Keras 3: S, the pass's last epoch the rest.
  uint64_t BatchReads(uint64_t epoch) const;
  // At most this many more batches tf.data's prefetch may read while epoch
  // `epoch` runs: tf.keras 2 - batches after the S-th of the epoch's pass,
  // never trained on; Keras 3 - the pass's next batches, trained on in the
  // next epoch(s) but sliced from this epoch's index array.
  uint64_t ReadAhead(uint64_t epoch) const;
  // Slices k of the index array the epoch trains on, ascending: with
  // fit(shuffle=False) exactly the ones read (tf.keras 2: 0..S-1; Keras 3 the
  // epoch's share of the pass), with shuffle=True every k (which ones Python's
  // random picks is unknowable; BatchReads of them).
  std::vector<uint64_t> EpochBatchPositions(uint64_t epoch) const;

  // How the index array of an epoch was drawn: np.random.seed(seed + reads -
  // 1) by the last __getitem__ to start before on_epoch_end (reads counts
  // every __getitem__ of the iterator, spec batches included), the first
  // `calls` NumPy calls of that __getitem__'s augmentation draws
  // (KerasFlowAugment::Calls per image), interleaved with up to repeats_max
  // permutations of earlier on_epoch_end calls with no read between (Keras 3:
  // an epoch whose batches were all read ahead), then the permutation.
  // reads 0: the permutation the first __getitem__ drew right after
  // np.random.seed(seed) (tf.keras 2's epoch 0). A count of reads that races
  // tf.data's read-ahead leaves `calls` anywhere in that batch's draws.
  struct Draws {
    uint64_t reads_min = 0, reads_max = 0;
    std::vector<uint64_t> calls;  // the possible counts, ascending
    uint64_t repeats_max = 0;     // earlier permutations: 0..repeats_max
    bool exact() const { return reads_min == reads_max && calls.size() == 1 && repeats_max == 0; }
  };
  Result<Draws> EpochDraws(uint64_t epoch) const;
  // The index array on_epoch_end draws after `reads` __getitem__ calls, the
  // last having made `calls` augmentation calls, with an earlier on_epoch_end
  // permutation after each repeats_at[i] of them (ascending, <= calls; no
  // validation iterator). The planner can call it with the count of batches
  // it saw opened. InvalidArgument when calls exceeds a batch's, a repeat is
  // out of order or the reseed is outside NumPy's range.
  Result<std::vector<Index>> PermutationAfter(uint64_t reads, uint64_t calls,
                                              const std::vector<uint64_t>& repeats_at = {}) const;
  static constexpr uint64_t kMaxCandidatePermutations = 4096;
  // Batches refuses an epoch whose candidates hold more files than this in
  // all (the planner keeps about 18 bytes per file of a candidate).
  static constexpr uint64_t kMaxBatchEntries = uint64_t{1} << 22;

  uint64_t world_size() const override { return 1; }
  uint64_t dataset_size() const override { return index_.size(); }
  // --protocol fit: the batches model.fit reads before epoch 0 (Keras 3: 0
  // and 1 for the tensor spec; tf.keras: 0), in that order; empty for next.
  Result<std::vector<std::vector<Index>>> PreTrainingBatches() const;

  // The epoch's batches concatenated; epoch 0 of fit starts with the
  // pre-training batches (they are opened too). InvalidArgument, with the
  // reason and the fix, when the epoch's index array is not exact.
  Result<std::vector<Index>> Order(uint64_t rank, uint64_t epoch) const override;
  // When some epoch's batches are no known order (fit with shuffle=True, or
  // an index array with several candidates: steps_per_epoch below len(it),
  // a short last batch): EpochBatches as the candidates, BatchReads(epoch)
  // of them read; epoch 0's lead is PreTrainingBatches(), whose order is
  // known. nullopt when every epoch is exact (Order() is the read order).
  Result<std::optional<BatchEpoch>> Batches(uint64_t rank, uint64_t epoch) const override;

 private:
  KerasFlow() = default;
  // Epoch `epoch`'s index array when exact; InvalidArgument saying why not.
  Result<std::vector<Index>> IndexArray(uint64_t epoch) const;
  // tf.keras 2.15 fit with validation_data: the training index array after
  // the validation iterator's epoch (keras_flow.cpp).
  Result<std::vector<Index>> ValidationIndexArray(uint64_t epoch) const;
  static constexpr uint64_t kSeedLimit = 1ull << 32;  // np.random.seed's range
  // Batches fit reads before training: Keras 3 get_tf_dataset reads
  // NUM_BATCHES_FOR_TENSOR_SPEC = 2 for the signature, tf.keras 2.15
  // KerasSequenceAdapter._peek_and_restore reads x[0]; 0 for next().
  uint64_t SpecBatches() const;
  // Every epoch one index array read in a known batch order.
  bool every_epoch_exact() const;
  uint64_t steps() const;                    // S (len(it) when not given)
  uint64_t epochs_per_pass() const;          // Keras 3: ceil(len(it) / S); tf.keras 2: 1
  uint64_t Consumed(uint64_t epochs) const;  // batches trained on in epochs 0..epochs-1
  uint64_t BatchSize(uint64_t k) const;      // images of slice k

  DatasetIndex index_;
  KerasFlowOptions options_;
  uint64_t validation_size_ = 0;  // images of the validation subset (fit_validation_seed)
};

}  // namespace clairfs::prefetch
