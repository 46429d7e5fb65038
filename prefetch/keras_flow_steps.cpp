// KerasFlow: which batches model.fit reads per epoch, with and without
// steps_per_epoch, and how each epoch's index array was drawn. Rules read in
// tf.keras 2.15 (keras/src/engine/data_adapter.py DataHandler,
// KerasSequenceAdapter; keras/src/engine/training.py Model.fit) and Keras 3.15
// (keras/src/trainers/epoch_iterator.py EpochIterator,
// keras/src/trainers/data_adapters/py_dataset_adapter.py PyDatasetAdapter,
// keras/src/backend/tensorflow/trainer.py fit / TFEpochIterator), and checked
// against both by tests/tf/keras_real_check.py.
//
// Every DirectoryIterator.__getitem__ reseeds NumPy with seed +
// total_batches_seen (keras/src/legacy/preprocessing/image.py Iterator, the
// same in tf.keras 2.15), then draws per image; on_epoch_end draws the next
// index array from whatever state the last __getitem__ to start left. Both
// lines read the batches through tf.data (from_generator, then prefetch:
// tf.keras 2 prefetch(1) + prefetch(AUTOTUNE), Keras 3 prefetch(AUTOTUNE)),
// whose thread reads ahead of training while the main thread calls
// on_epoch_end: how many reads precede it is a race unless the pass over the
// batches has ended (no batch is left to read ahead).
#include <algorithm>
#include <numeric>

#include "prefetch/keras_flow.hpp"

namespace clairfs::prefetch {

uint64_t KerasFlow::SpecBatches() const {
  if (options_.protocol != KerasFlowOptions::Protocol::kFit) return 0;
  return std::min<uint64_t>(options_.version.major >= 3 ? 2 : 1, batches_per_epoch());
}

uint64_t KerasFlow::steps() const {
  uint64_t s = options_.steps_per_epoch;
  return s == 0 || options_.protocol != KerasFlowOptions::Protocol::kFit ? batches_per_epoch() : s;
}

uint64_t KerasFlow::epochs_per_pass() const {
  // Keras 3 keeps its tf.data iterator while steps_per_epoch is given and
  // makes a new one once len(it) steps were seen (_enumerate_iterator);
  // tf.keras 2 makes a new one every epoch (should_recreate_iterator: True).
  if (options_.version.major < 3) return 1;
  return (batches_per_epoch() + steps() - 1) / steps();
}

uint64_t KerasFlow::BatchSize(uint64_t k) const {
  uint64_t b = options_.batch_size;
  return k + 1 == batches_per_epoch() ? index_.size() - k * b : b;
}

uint64_t KerasFlow::BatchReads(uint64_t epoch) const {
  uint64_t len = batches_per_epoch();
  uint64_t q = epoch % epochs_per_pass();
  // Keras 3: the step loop breaks once the pass's len(it) batches were seen
  // (with the "ran out of data" warning), so the pass's last epoch is short.
  return std::min(steps(), len - q * steps());
}

uint64_t KerasFlow::Consumed(uint64_t epochs) const {
  uint64_t per_pass = epochs_per_pass();
  uint64_t full = epochs / per_pass;
  uint64_t within = std::min(batches_per_epoch(), (epochs % per_pass) * steps());
  return full * std::min(batches_per_epoch(), per_pass * steps()) + within;
}

uint64_t KerasFlow::ReadAhead(uint64_t epoch) const {
  uint64_t len = batches_per_epoch();
  if (options_.version.major < 3) return len - steps();
  uint64_t q = epoch % epochs_per_pass();
  return len - q * steps() - BatchReads(epoch);
}

std::vector<uint64_t> KerasFlow::EpochBatchPositions(uint64_t epoch) const {
  uint64_t len = batches_per_epoch();
  uint64_t first = 0, count = len;
  bool fit = options_.protocol == KerasFlowOptions::Protocol::kFit;
  if (fit && !options_.fit_shuffle) {
    // The generator yields x[0], x[1], ... in order (_finite_generator /
    // generator_fn with shuffle off).
    first = options_.version.major >= 3 ? (epoch % epochs_per_pass()) * steps() : 0;
    count = BatchReads(epoch);
  }
  std::vector<uint64_t> out(count);
  std::iota(out.begin(), out.end(), first);
  return out;
}

Result<KerasFlow::Draws> KerasFlow::EpochDraws(uint64_t epoch) const {
  Draws d;
  d.images = {0};
  if (!options_.shuffle) return d;  // arange: nothing drawn
  uint64_t len = batches_per_epoch();
  uint64_t seed = *options_.seed;
  bool fit = options_.protocol == KerasFlowOptions::Protocol::kFit;
  uint64_t pre = SpecBatches();
  // Every batch trained on reseeds: NumPy raises once seed + count >= 2^32.
  uint64_t last = seed + (fit ? pre + Consumed(epoch + 1) : (epoch + 1) * len) - 1;
  if (last >= kSeedLimit) {
    return Status::InvalidArgument("np.random.seed(seed + total_batches_seen) = " +
                                   std::to_string(last) +
                                   " is >= 2^32: NumPy raises ValueError there");
  }
  if (!fit) {
    // _flow_index: reseed with seed + epoch * len(it), then permute.
    d.reads_min = d.reads_max = epoch == 0 ? 0 : epoch * len + 1;
    return d;
  }
  bool keras3 = options_.version.major >= 3;
  uint64_t per_pass = epochs_per_pass();
  uint64_t pass = epoch / per_pass;
  // The pass's last batch trained on: with shuffle=True any of them, so the
  // short one (n % B images) or a full one.
  std::vector<uint64_t> last_images = {BatchSize(len - 1)};
  if (options_.fit_shuffle && len > 1 && BatchSize(len - 1) != options_.batch_size) {
    last_images.push_back(options_.batch_size);
  }
  bool pass_ended = keras3 ? epoch % per_pass == 0 : (epoch == 0 || steps() == len);
  if (pass_ended) {
    // A permutation drawn with no batch left to read ahead: exact up to the
    // size of the last batch. Keras 3's new iterator (made before
    // on_epoch_end) starts reading at its first get_next, after it.
    if (pass == 0) {
      // tf.keras 2: the peeked x[0] drew it after np.random.seed(seed). Keras 3
      // fit calls epoch_iterator.reset() (on_epoch_end) after the spec batches.
      d.reads_min = d.reads_max = keras3 ? pre : 0;
      d.images = {keras3 ? BatchSize(pre - 1) : 0};
    } else {
      d.reads_min = d.reads_max = pre + pass * len;
      d.images = last_images;
    }
    return d;
  }
  // Drawn mid-pass (steps_per_epoch < len(it)): the trained-on batches have
  // been read, and tf.data may have read ahead up to the end of the pass
  // (tf.keras 2: of every earlier epoch's pass too), the last read started
  // anywhere among its images.
  if (keras3) {
    d.reads_min = pre + pass * len + (epoch % per_pass) * steps();
    d.reads_max = pre + (pass + 1) * len;
  } else {
    d.reads_min = pre + epoch * steps();
    d.reads_max = pre + epoch * len;
  }
  d.images.resize(options_.batch_size + 1);
  std::iota(d.images.begin(), d.images.end(), uint64_t{0});
  return d;
}

Result<std::vector<Index>> KerasFlow::PermutationAfter(uint64_t reads, uint64_t images) const {
  uint64_t n = index_.size();
  if (!options_.shuffle) {
    std::vector<Index> a(n);
    std::iota(a.begin(), a.end(), Index{0});
    return a;
  }
  if (images > options_.batch_size) {
    return Status::InvalidArgument("PermutationAfter: " + std::to_string(images) +
                                   " images is more than batch_size " +
                                   std::to_string(options_.batch_size));
  }
  uint64_t seed = *options_.seed;
  if (reads == 0) return NumpyRandomState(static_cast<uint32_t>(seed)).Permutation(n);
  if (seed + reads - 1 >= kSeedLimit) {
    return Status::InvalidArgument("np.random.seed(seed + total_batches_seen) = " +
                                   std::to_string(seed + reads - 1) +
                                   " is >= 2^32: NumPy raises ValueError there");
  }
  NumpyRandomState rng(static_cast<uint32_t>(seed + reads - 1));
  // The first __getitem__ found no index array: it drew one before its images.
  if (reads == 1) rng.Permutation(n);
  for (uint64_t i = 0; i < images; ++i) options_.augment.Draw(rng);
  return rng.Permutation(n);
}

Result<std::vector<std::vector<Index>>> KerasFlow::EpochPermutations(uint64_t epoch) const {
  std::vector<std::vector<Index>> out;
  if (options_.protocol == KerasFlowOptions::Protocol::kFit && options_.shuffle &&
      options_.fit_validation_seed && options_.version.major < 3 && epoch > 0) {
    auto a = ValidationIndexArray(epoch);
    if (!a.ok()) return a.status();
    out.push_back(std::move(a).value());
    return out;
  }
  auto draws = EpochDraws(epoch);
  if (!draws.ok()) return draws.status();
  const Draws& d = draws.value();
  uint64_t count = (d.reads_max - d.reads_min + 1) * d.images.size();
  if (count > kMaxCandidatePermutations) {
    return Status::InvalidArgument(
        "epoch " + std::to_string(epoch) + " has " + std::to_string(count) +
        " candidate permutations (reads " + std::to_string(d.reads_min) + ".." +
        std::to_string(d.reads_max) + "): more than " +
        std::to_string(kMaxCandidatePermutations) +
        "; use PermutationAfter with the count of batches seen");
  }
  for (uint64_t r = d.reads_min; r <= d.reads_max; ++r) {
    for (uint64_t images : d.images) {
      auto a = PermutationAfter(r, images);
      if (!a.ok()) {
        if (r > d.reads_min) break;  // a later reseed out of NumPy's range: not a candidate
        return a.status();
      }
      out.push_back(std::move(a).value());
    }
  }
  return out;
}

}  // namespace clairfs::prefetch
