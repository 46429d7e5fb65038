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

#include "prefetch/keras/keras_flow.hpp"

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
  d.calls = {0};
  if (!options_.shuffle) return d;  // arange: nothing drawn
  uint64_t len = batches_per_epoch();
  uint64_t seed = *options_.seed;
  bool fit = options_.protocol == KerasFlowOptions::Protocol::kFit;
  uint64_t pre = SpecBatches();
  // Every batch trained on reseeds: NumPy raises once seed + count >= 2^32.
  uint64_t last = seed + (fit ? pre + Consumed(epoch + 1) : (epoch + 1) * len) - 1;
  if (last >= kSeedLimit) {
    return Status::InvalidArgument(
        "np.random.seed(seed + total_batches_seen) = " + std::to_string(last) +
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
  // short one (n % B images) or a full one; all its draws were made.
  uint64_t per_image = options_.augment.Calls().size();
  std::vector<uint64_t> last_calls = {BatchSize(len - 1) * per_image};
  if (options_.fit_shuffle && len > 1 && BatchSize(len - 1) != options_.batch_size) {
    last_calls.push_back(options_.batch_size * per_image);
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
      d.calls = {keras3 ? BatchSize(pre - 1) * per_image : 0};
    } else {
      d.reads_min = d.reads_max = pre + pass * len;
      d.calls = last_calls;
      // Keras 3: the pass's last batches may all have been read ahead in an
      // earlier epoch of it; each epoch since then re-permuted with no reseed.
      d.repeats_max = per_pass - 1;
    }
    return d;
  }
  // Drawn mid-pass (steps_per_epoch < len(it)): the trained-on batches have
  // been read, and tf.data may have read ahead up to the end of the pass
  // (tf.keras 2: of every earlier epoch's pass too), the last read started
  // anywhere among its draws.
  if (keras3) {
    d.reads_min = pre + pass * len + (epoch % per_pass) * steps();
    d.reads_max = pre + (pass + 1) * len;
    // Epochs of this pass after its first may have read nothing new (their
    // batches read ahead): their on_epoch_end permuted without a reseed.
    d.repeats_max = epoch % per_pass - 1;
  } else {
    // Every epoch's new iterator reads its first batch after on_epoch_end:
    // a reseed always separates two permutations.
    d.reads_min = pre + epoch * steps();
    d.reads_max = pre + epoch * len;
  }
  d.calls.resize(options_.batch_size * per_image + 1);
  std::iota(d.calls.begin(), d.calls.end(), uint64_t{0});
  return d;
}

Result<std::vector<Index>> KerasFlow::PermutationAfter(
    uint64_t reads, uint64_t calls, const std::vector<uint64_t>& repeats_at) const {
  uint64_t n = index_.size();
  if (!options_.shuffle) {
    std::vector<Index> a(n);
    std::iota(a.begin(), a.end(), Index{0});
    return a;
  }
  std::vector<KerasFlowAugment::Call> per_image = options_.augment.Calls();
  if (calls > options_.batch_size * per_image.size()) {
    return Status::InvalidArgument("PermutationAfter: " + std::to_string(calls) +
                                   " calls is more than a batch of " +
                                   std::to_string(options_.batch_size) + " makes");
  }
  if (!std::is_sorted(repeats_at.begin(), repeats_at.end()) ||
      (!repeats_at.empty() && repeats_at.back() > calls)) {
    return Status::InvalidArgument("PermutationAfter: repeats_at must be ascending and <= calls");
  }
  uint64_t reseed = *options_.seed + (reads == 0 ? 0 : reads - 1);
  if (reseed >= kSeedLimit) {
    return Status::InvalidArgument(
        "np.random.seed(seed + total_batches_seen) = " + std::to_string(reseed) +
        " is >= 2^32: NumPy raises ValueError there");
  }
  NumpyRandomState rng(static_cast<uint32_t>(reseed));
  if (reads == 0) calls = 0;  // the permutation the first call drew
  // The first __getitem__ found no index array: it drew one before its images.
  if (reads == 1) rng.Permutation(n);
  size_t next = 0;
  for (uint64_t i = 0; i <= calls; ++i) {
    while (next < repeats_at.size() && repeats_at[next] == i) {
      rng.Permutation(n);
      ++next;
    }
    if (i < calls) KerasFlowAugment::DrawCall(per_image[i % per_image.size()], rng);
  }
  return rng.Permutation(n);
}

namespace {

// Every ascending sequence of `length` values in 0..top, passed to `emit`.
template <typename F>
void AscendingSequences(uint64_t length, uint64_t top, std::vector<uint64_t>& seq, F&& emit) {
  if (seq.size() == length) {
    emit(seq);
    return;
  }
  for (uint64_t v = seq.empty() ? 0 : seq.back(); v <= top; ++v) {
    seq.push_back(v);
    AscendingSequences(length, top, seq, emit);
    seq.pop_back();
  }
}

// C(j + r, r), the count of those sequences, saturating at `cap` + 1.
uint64_t CountSequences(uint64_t r, uint64_t j, uint64_t cap) {
  uint64_t c = 1;
  for (uint64_t i = 1; i <= r; ++i) {
    c = c * (j + i) / i;
    if (c > cap) return cap + 1;
  }
  return c;
}

}  // namespace

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
  uint64_t count = 0;
  for (uint64_t calls : d.calls) {
    for (uint64_t r = 0; r <= d.repeats_max; ++r) {
      count += CountSequences(r, calls, kMaxCandidatePermutations);
    }
  }
  count *= d.reads_max - d.reads_min + 1;
  if (count > kMaxCandidatePermutations) {
    return Status::InvalidArgument("epoch " + std::to_string(epoch) + " has more than " +
                                   std::to_string(kMaxCandidatePermutations) +
                                   " candidate permutations (reads " + std::to_string(d.reads_min) +
                                   ".." + std::to_string(d.reads_max) +
                                   "); use PermutationAfter with the count of batches seen");
  }
  // A reseed past NumPy's range ends the candidates (NumPy raises there).
  bool past_range = false;
  for (uint64_t reads = d.reads_min; reads <= d.reads_max && !past_range; ++reads) {
    for (uint64_t calls : d.calls) {
      for (uint64_t r = 0; r <= d.repeats_max && !past_range; ++r) {
        std::vector<uint64_t> seq;
        Status failed = Status::Ok();
        AscendingSequences(r, calls, seq, [&](const std::vector<uint64_t>& at) {
          if (!failed.ok()) return;
          auto a = PermutationAfter(reads, calls, at);
          if (a.ok()) {
            out.push_back(std::move(a).value());
          } else {
            failed = a.status();
          }
        });
        if (!failed.ok()) {
          if (reads == d.reads_min) return failed;
          past_range = true;
        }
      }
    }
  }
  if (d.reads_min < d.reads_max) {
    // on_epoch_end's _set_index_array holds np.arange(n) while it permutes.
    std::vector<Index> a(index_.size());
    std::iota(a.begin(), a.end(), Index{0});
    out.push_back(std::move(a));
  }
  return out;
}

}  // namespace clairfs::prefetch
