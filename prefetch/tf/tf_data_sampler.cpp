#include "prefetch/tf/tf_data_sampler.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

namespace clairfs::prefetch {

Result<TfDataSampler> TfDataSampler::Create(uint64_t dataset_size, const TfDataOptions& options) {
  if (options.num_shards == 0) return Status::InvalidArgument("shard count must be >= 1");
  TfSeeds seeds;
  if (options.shuffle) {
    Result<TfSeeds> s = TfGetSeed(options.seed);
    if (!s.ok()) return s.status();
    seeds = s.value();
  }
  if (options.driver == TfDriver::kLoop &&
      (options.validation_same || options.steps_per_epoch != 0)) {
    return Status::InvalidArgument(
        "steps per epoch and validation on the same dataset apply to the fit drivers only");
  }
  return TfDataSampler(dataset_size, options, seeds);
}

namespace {
// shard(n, i) of `total` elements keeps positions i, i + n, ...
// (tensorflow/core/kernels/data/shard_dataset_op.cc).
uint64_t ShardLength(uint64_t total, uint64_t n, uint64_t i) {
  return total / n + (i < total % n ? 1 : 0);
}

std::vector<Index> Stride(const std::vector<Index>& seq, uint64_t n, uint64_t i) {
  std::vector<Index> out;
  for (uint64_t p = i; p < seq.size(); p += n) out.push_back(seq[p]);
  return out;
}
}  // namespace

std::vector<Index> TfDataSampler::ShardedInput(uint64_t rank) const {
  const uint64_t n = options_.shard_before_shuffle ? options_.num_shards : 1;
  std::vector<Index> input;
  for (Index i = options_.shard_before_shuffle ? rank : 0; i < size_; i += n) input.push_back(i);
  return input;
}

uint64_t TfDataSampler::IteratorLength(uint64_t rank) const {
  const uint64_t n = options_.num_shards;
  if (options_.repeat == 0) return 0;
  uint64_t pass = options_.shard_before_shuffle ? ShardLength(size_, n, rank) : size_;
  if (options_.repeat_before_shuffle) {
    uint64_t total = pass * options_.repeat;
    return options_.shard_before_shuffle ? total : ShardLength(total, n, rank);
  }
  if (!options_.shard_before_shuffle) pass = ShardLength(size_, n, rank);
  return pass * options_.repeat;
}

std::vector<Index> TfDataSampler::IteratorElements(uint64_t rank,
                                                   const std::vector<uint64_t>& pass_pairs,
                                                   uint64_t from, uint64_t to) const {
  const uint64_t n = options_.num_shards;
  const bool stride_after = !options_.shard_before_shuffle && n > 1;
  const std::vector<Index> input = ShardedInput(rank);
  const uint64_t buffer = options_.buffer_size == 0 ? input.size() : options_.buffer_size;
  std::vector<Index> out;
  if (input.empty() || from >= to) return out;
  if (options_.repeat_before_shuffle) {
    // One shuffle iterator over the repeated input: computed from its start.
    uint64_t stream = stride_after ? to * n + n : to;
    uint64_t copies = (stream + buffer) / input.size() + 1;
    if (options_.repeat != 0 && copies > options_.repeat) copies = options_.repeat;
    std::vector<Index> big;
    big.reserve(copies * input.size());
    for (uint64_t c = 0; c < copies; ++c) big.insert(big.end(), input.begin(), input.end());
    std::vector<Index> seq =
        options_.shuffle
            ? TfShuffleIterator(
                  big, buffer,
                  TfIteratorSeeds(seeds_, options_.reshuffle_each_iteration, pass_pairs.at(0)),
                  stream)
            : big;
    if (stride_after) seq = Stride(seq, n, rank);
    if (from < seq.size()) out.assign(seq.begin() + from, seq.begin() + std::min(to, seq.size()));
    return out;
  }
  // Every pass is a new shuffle iterator: the fused ShuffleAndRepeat takes
  // fresh seeds at each epoch boundary (ClearEmptySlices in
  // shuffle_dataset_op.cc), a plain repeat() re-creates its input iterator;
  // both draw the dataset generator's next pair. Passes before `from` are
  // skipped, not computed.
  const uint64_t pass_len = stride_after ? ShardLength(input.size(), n, rank) : input.size();
  uint64_t pos = 0;
  for (uint64_t p = 0;
       (options_.repeat == 0 || p < options_.repeat) && pos < to && p < pass_pairs.size();
       ++p, pos += pass_len) {
    if (pos + pass_len <= from) continue;
    std::vector<Index> pass =
        options_.shuffle
            ? TfShuffleIterator(
                  input, buffer,
                  TfIteratorSeeds(seeds_, options_.reshuffle_each_iteration, pass_pairs[p]))
            : input;
    if (stride_after) pass = Stride(pass, n, rank);
    uint64_t a = from > pos ? from - pos : 0;
    uint64_t b = std::min<uint64_t>(pass.size(), to - pos);
    if (a < b) out.insert(out.end(), pass.begin() + a, pass.begin() + b);
  }
  return out;
}

Result<std::vector<Index>> TfDataSampler::Order(uint64_t rank, uint64_t epoch) const {
  if (rank >= options_.num_shards) {
    return Status::InvalidArgument("rank " + std::to_string(rank) + " is not below the " +
                                   std::to_string(options_.num_shards) + " shards");
  }
  const uint64_t n = options_.num_shards;
  const uint64_t length = IteratorLength(rank);  // 0 = endless
  const uint64_t pass = ShardLength(size_, n, rank);
  const uint64_t batch = options_.batch_size == 0 ? 1 : options_.batch_size;
  TfDriverOptions d;
  d.driver = options_.driver;
  d.num_batches = (length + batch - 1) / batch;
  d.steps_per_epoch = options_.steps_per_epoch;
  d.validation_same = options_.validation_same;
  Result<std::vector<TfEvent>> events = TfDriverEvents(d, epoch);
  if (!events.ok()) return events.status();

  // Which generator pair each pass of each iterator gets, in the order the
  // draws happen: one when the iterator is created (the shuffle iterator's
  // Initialize), one each time a read first reaches a later pass (the fused
  // ShuffleAndRepeat reseeds at the epoch boundary; a separate repeat()
  // creates a new shuffle iterator), and with a separate repeat one more when
  // the iterator is read to its end (RepeatDatasetOp makes one more input
  // iterator after the last pass). Fused = shuffle directly followed by
  // repeat (grappler shuffle_and_repeat_fusion), i.e. no shard in between.
  const bool passes_draw = !options_.repeat_before_shuffle;
  const bool fused = options_.repeat_fusion && (n == 1 || options_.shard_before_shuffle);
  const bool end_draw = passes_draw && !fused && options_.repeat > 1;
  std::map<uint64_t, std::vector<uint64_t>> pairs;
  std::set<uint64_t> ended;
  uint64_t next_pair = 0;
  std::vector<Index> out;
  for (const TfEvent& ev : events.value()) {
    const uint64_t k = ev.read.iterator;
    if (ev.kind == TfEvent::kCreate) {
      pairs[k] = {next_pair++};
      continue;
    }
    uint64_t from = ev.read.first_batch * batch;
    uint64_t to = (ev.read.first_batch + ev.read.batches) * batch;
    if (length != 0 && to > length) to = length;
    std::vector<uint64_t>& mine = pairs[k];
    if (passes_draw && pass != 0 && to > 0) {
      while (mine.size() < (to + pass - 1) / pass) mine.push_back(next_pair++);
    }
    if (end_draw && length != 0 && to >= length && ended.insert(k).second) ++next_pair;
    if (ev.epoch != epoch || from >= to) continue;
    std::vector<Index> part = IteratorElements(rank, mine, from, to);
    out.insert(out.end(), part.begin(), part.end());
  }
  return out;
}

}  // namespace clairfs::prefetch
