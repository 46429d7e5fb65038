#include "prefetch/tf/tf_shuffle.hpp"

#include <algorithm>
#include <array>
#include <string>
#include <utility>

#include "prefetch/rng/tf_philox.hpp"

namespace clairfs::prefetch {

std::vector<Index> TfShuffleIterator(const std::vector<Index>& input, uint64_t buffer_size,
                                     TfSeeds seeds, uint64_t max_out) {
  // tensorflow/core/kernels/data/shuffle_dataset_op.cc, ShuffleDatasetBase::
  // Iterator::GetNextInternal with one slice: fill to buffer_size, then per
  // element: offset = Random() % size, emit (start + offset) % B, swap the slot
  // with slot start, start++, refill one.
  const uint64_t n = input.size();
  const uint64_t b = buffer_size < n ? buffer_size : n;
  const uint64_t want = max_out < n ? max_out : n;
  std::vector<Index> out;
  out.reserve(want);
  if (n == 0) return out;
  std::vector<Index> ring(b);
  TfPhiloxWords words(static_cast<uint64_t>(seeds.seed), static_cast<uint64_t>(seeds.seed2));
  uint64_t next_in = 0;
  uint64_t start = 0;
  uint64_t end = 0;
  while (out.size() < want) {
    while (next_in < n && end - start < b) ring[end++ % b] = input[next_in++];
    uint64_t offset = words.Next() % (end - start);
    uint64_t slot = (start + offset) % b;
    out.push_back(ring[slot]);
    ring[slot] = ring[start % b];
    ++start;
  }
  return out;
}

TfSeeds TfIteratorSeeds(TfSeeds dataset_seeds, bool reshuffle_each_iteration, uint64_t k) {
  // tensorflow/core/kernels/data/random_seed_ops.cc: FixedSeedGenerator hands
  // out the dataset's seeds; RandomSeedGenerator two 32-bit words per iterator
  // from SingleSampleAdapter<PhiloxRandom>(seed, seed2).
  if (!reshuffle_each_iteration) return dataset_seeds;
  TfPhiloxWords words(static_cast<uint64_t>(dataset_seeds.seed),
                      static_cast<uint64_t>(dataset_seeds.seed2));
  TfSeeds s;
  for (uint64_t i = 0; i <= k; ++i) {
    s.seed = words.Next();
    s.seed2 = words.Next();
  }
  return s;
}

namespace {
constexpr std::array<std::pair<std::string_view, TfDriver>, 3> kDrivers = {{
    {"loop", TfDriver::kLoop},
    {"keras3-fit", TfDriver::kKeras3Fit},
    {"keras2-fit", TfDriver::kKeras2Fit},
}};
}  // namespace

Result<TfDriver> ParseTfDriver(std::string_view name) {
  for (const auto& [text, d] : kDrivers) {
    if (text == name) return d;
  }
  return Status::InvalidArgument("unknown driver '" + std::string(name) +
                                 "' (expected loop, keras3-fit or keras2-fit)");
}

std::string_view TfDriverName(TfDriver driver) {
  for (const auto& [text, d] : kDrivers) {
    if (d == driver) return text;
  }
  return "?";
}

Result<std::vector<TfEvent>> TfDriverEvents(const TfDriverOptions& o, uint64_t last_epoch) {
  const uint64_t nb = o.num_batches;
  std::vector<TfEvent> ev;
  auto create = [&](uint64_t e, uint64_t k) { ev.push_back({TfEvent::kCreate, e, {k, 0, 0}}); };
  auto read = [&](uint64_t e, uint64_t k, uint64_t first, uint64_t count) {
    ev.push_back({TfEvent::kRead, e, {k, first, count}});
  };
  if (o.driver == TfDriver::kLoop) {
    if (o.validation_same || o.steps_per_epoch != 0) {
      return Status::InvalidArgument("validation and steps_per_epoch are fit settings, not loop");
    }
    if (nb == 0) return Status::InvalidArgument("a loop over an endless dataset never ends");
    for (uint64_t e = 0; e <= last_epoch; ++e) {
      create(e, e);
      read(e, e, 0, nb);
    }
    return ev;
  }
  if (nb == 0 && (o.steps_per_epoch == 0 || o.validation_same)) {
    return Status::InvalidArgument(
        "fit over an endless dataset (.repeat()) needs steps_per_epoch, and validation on it "
        "validation_steps (not modelled: validate on another dataset)");
  }
  if (o.validation_same && o.steps_per_epoch != 0) {
    return Status::Unsupported(
        "validation on the same dataset with steps_per_epoch is not modelled (the training "
        "iterator's prefetch races the validation pass): use an order file");
  }
  if (o.driver == TfDriver::kKeras2Fit) {
    // keras/engine/data_adapter.py (tf.keras 2.15) DataHandler.enumerate_epochs:
    // iter(dataset) once before the epoch loop, then again every epoch while
    // should_recreate_iterator() (steps_per_epoch None or equal to the
    // cardinality). fit's handler and every evaluate() (validation) call's
    // handler each do this, so each pays one unused iterator.
    create(0, 0);
    if (nb == 0) {
      // Endless: should_recreate_iterator() is false, the first iterator serves
      // every epoch, steps_per_epoch batches at a time.
      for (uint64_t e = 0; e <= last_epoch; ++e) {
        read(e, 0, e * o.steps_per_epoch, o.steps_per_epoch);
      }
      return ev;
    }
    if (o.steps_per_epoch != 0 && o.steps_per_epoch != nb) {
      // should_recreate_iterator() is false: the first iterator runs on across
      // epochs until it is exhausted, which ends training (_insufficient_data).
      for (uint64_t e = 0; e <= last_epoch && e * o.steps_per_epoch < nb; ++e) {
        uint64_t first = e * o.steps_per_epoch;
        read(e, 0, first, std::min(o.steps_per_epoch, nb - first));
      }
      return ev;
    }
    uint64_t next = 1;
    for (uint64_t e = 0; e <= last_epoch; ++e) {
      create(e, next);
      read(e, next, 0, nb);
      ++next;
      if (o.validation_same) {
        create(e, next++);
        create(e, next);
        read(e, next, 0, nb);
        ++next;
      }
    }
    return ev;
  }
  // Keras 3: keras/src/trainers/epoch_iterator.py EpochIterator.
  // _enumerate_iterator: a new iterator when there is none or steps_per_epoch
  // is None; after the steps, once num_batches steps were seen on it, another
  // new iterator (kept, or thrown away at the next epoch when steps_per_epoch
  // is None). Validation (evaluate with the cached epoch iterator) calls
  // reset() first, so each validation pass makes two. With an endless dataset
  // num_batches is None: one iterator for the whole fit.
  uint64_t next = 0;
  bool have = false;
  uint64_t current = 0;
  uint64_t seen = 0;
  for (uint64_t e = 0; e <= last_epoch; ++e) {
    uint64_t steps = o.steps_per_epoch != 0 ? o.steps_per_epoch : nb;
    if (!have || o.steps_per_epoch == 0) {
      current = next++;
      create(e, current);
      have = true;
      seen = 0;
    }
    uint64_t first = seen;
    for (uint64_t s = 0; s < steps; ++s) {
      if (nb != 0 && seen >= nb) break;
      ++seen;
    }
    read(e, current, first, seen - first);
    if (nb != 0 && seen >= nb) {
      current = next++;
      create(e, current);
      seen = 0;
    }
    if (o.validation_same) {
      create(e, next);
      read(e, next, 0, nb);
      create(e, next + 1);
      next += 2;
    }
  }
  return ev;
}

Result<std::vector<TfRead>> TfEpochReads(const TfDriverOptions& o, uint64_t epoch) {
  Result<std::vector<TfEvent>> events = TfDriverEvents(o, epoch);
  if (!events.ok()) return events.status();
  std::vector<TfRead> reads;
  for (const TfEvent& e : events.value()) {
    if (e.kind == TfEvent::kRead && e.epoch == epoch) reads.push_back(e.read);
  }
  return reads;
}

}  // namespace clairfs::prefetch
