#include "prefetch/keras/keras_flow.hpp"

#include <algorithm>
#include <map>
#include <numeric>

namespace clairfs::prefetch {

namespace {
// keras/src/legacy/preprocessing/image.py Iterator.white_list_formats,
// matched with str.endswith and no dot.
const std::vector<std::string> kFlowFormats = {"png", "jpg", "jpeg", "bmp", "ppm", "tif", "tiff"};
}  // namespace

Result<DatasetIndex> KerasFlowListing(const Listing& listing, const KerasFlowOptions& options) {
  if (!(options.validation_split >= 0 && options.validation_split < 1)) {
    return Status::InvalidArgument(
        "ImageDataGenerator validation_split must be strictly between 0 and 1");
  }
  std::vector<TopDirectory> groups = GroupByTopDirectory(listing);
  DatasetIndex index;
  if (options.classes) {
    index.classes = *options.classes;
  } else {
    for (const TopDirectory& g : groups) index.classes.push_back(g.name);
  }
  std::map<std::string, uint32_t> class_index;  // dict(zip(classes, range(n)))
  for (size_t i = 0; i < index.classes.size(); ++i) {
    class_index[index.classes[i]] = static_cast<uint32_t>(i);
  }
  for (const std::string& name : index.classes) {
    auto g =
        std::lower_bound(groups.begin(), groups.end(), name,
                         [](const TopDirectory& t, const std::string& n) { return t.name < n; });
    if (g == groups.end() || g->name != name) continue;  // os.walk of a missing dir: nothing
    std::vector<std::string> files;
    for (const std::string& f : g->files) {
      std::string_view base = std::string_view(f).substr(f.rfind('/') + 1);
      if (!HasSuffixIgnoringCase(base, kFlowFormats)) continue;
      if (!options.follow_links && HiddenBySymlink(listing, name, f)) continue;
      files.push_back(f);
    }
    size_t begin = 0, end = files.size();
    if (options.subset != KerasFlowOptions::Subset::kNone) {
      // set_processing_attrs: split = (0, v) or (v, 1); files[int(a*n):int(b*n)].
      auto n = static_cast<double>(files.size());
      auto cut = static_cast<size_t>(options.validation_split * n);
      if (options.subset == KerasFlowOptions::Subset::kValidation) {
        end = cut;
      } else {
        begin = cut;
      }
    }
    for (size_t i = begin; i < end; ++i) {
      index.paths.push_back(files[i]);
      index.labels.push_back(class_index[name]);
    }
  }
  if (index.paths.empty()) {
    return Status::NotFound(
        "flow_from_directory: no images found (formats png jpg jpeg bmp "
        "ppm tif tiff)");
  }
  return index;
}

Result<KerasFlow> KerasFlow::Create(const Listing& listing, const KerasFlowOptions& options) {
  if (options.batch_size == 0) return Status::InvalidArgument("batch_size must be >= 1");
  if (options.shuffle && !options.seed) {
    return Status::InvalidArgument(
        "flow_from_directory without a seed permutes with NumPy's global generator, whose "
        "state is unknowable: pass seed=S to flow_from_directory (and --seed S here)");
  }
  if (options.seed && *options.seed >= KerasFlow::kSeedLimit) {
    return Status::InvalidArgument("flow_from_directory seed " + std::to_string(*options.seed) +
                                   " is outside np.random.seed's range [0, 2^32)");
  }
  if (options.protocol == KerasFlowOptions::Protocol::kFit && options.version.major >= 3 &&
      options.version < KerasVersion{3, 7, 0}) {
    // Read in keras 3.0.5-3.6.0: fit shuffles batches in an unseeded
    // tf.data buffer (py_dataset_adapter.py `ds.shuffle(8)`, up to 3.5) and
    // has no epoch_iterator.reset() (until 3.6): another model, not built.
    return Status::InvalidArgument(
        "--protocol fit is modelled for tf.keras 2.15 and Keras >= 3.7 (Keras " +
        options.version.ToString() +
        " fit drives the iterator differently): use --protocol "
        "next or an order file");
  }
  bool fit = options.protocol == KerasFlowOptions::Protocol::kFit;
  if (options.steps_per_epoch != 0 && !fit) {
    return Status::InvalidArgument(
        "--steps-per-epoch is model.fit(steps_per_epoch=): it needs --protocol fit");
  }
  auto index = KerasFlowListing(listing, options);
  if (!index.ok()) return index.status();
  KerasFlow flow;
  flow.index_ = std::move(index).value();
  flow.options_ = options;
  uint64_t batches = flow.batches_per_epoch();
  if (options.steps_per_epoch > batches) {
    // tf.keras 2.15 runs out of data and stops training after the first
    // epoch (DataHandler.catch_stop_iteration); Keras 3 cuts every epoch at
    // len(it) (EpochIterator._enumerate_iterator). Neither is modelled.
    return Status::InvalidArgument(
        "--steps-per-epoch " + std::to_string(options.steps_per_epoch) +
        " is more than "
        "len(it) = " +
        std::to_string(batches) +
        " batches: Keras then runs out of data "
        "(tf.keras 2 stops training, Keras 3 cuts the epoch); use at most " +
        std::to_string(batches));
  }
  if (options.steps_per_epoch != 0 && options.steps_per_epoch < batches &&
      options.fit_validation_seed) {
    return Status::InvalidArgument(
        "--steps-per-epoch below len(it) with --fit-validation-seed is not modelled (the "
        "validation iterator's reseeds join the race of the read-ahead): drop one of them");
  }
  if (options.fit_validation_seed) {
    KerasFlowOptions val = options;
    val.subset = KerasFlowOptions::Subset::kValidation;
    auto val_index = KerasFlowListing(listing, val);
    if (!val_index.ok()) return val_index.status();
    flow.validation_size_ = val_index.value().size();
  }
  return flow;
}

uint64_t KerasFlow::batches_per_epoch() const {
  return (index_.size() + options_.batch_size - 1) / options_.batch_size;
}

bool KerasFlow::batch_order_exact() const {
  return options_.protocol == KerasFlowOptions::Protocol::kNext || !options_.fit_shuffle;
}

Result<std::vector<Index>> KerasFlow::IndexArray(uint64_t epoch) const {
  if (options_.protocol == KerasFlowOptions::Protocol::kFit && options_.shuffle &&
      options_.fit_validation_seed && options_.version.major < 3 && epoch > 0) {
    return ValidationIndexArray(epoch);
  }
  auto draws = EpochDraws(epoch);
  if (!draws.ok()) return draws.status();
  const Draws& d = draws.value();
  if (d.exact()) return PermutationAfter(d.reads_min, d.calls.front());
  uint64_t n = index_.size();
  if (d.reads_min == d.reads_max && d.repeats_max == 0) {
    // The last batch of the pass: its size, hence its draws, is unknown.
    return Status::InvalidArgument(
        "model.fit(shuffle=True) runs the batches in an order from Python's random, and the "
        "last batch (whose size is unknown: " +
        std::to_string(n) +
        " images are not a "
        "multiple of batch_size " +
        std::to_string(options_.batch_size) +
        ") draws before "
        "epoch " +
        std::to_string(epoch) +
        "'s permutation: pass shuffle=False to model.fit "
        "(--fit-shuffle off) or use a batch size that divides " +
        std::to_string(n));
  }
  std::string why = d.reads_min == d.reads_max
                        ? "after all " + std::to_string(d.reads_min) + " batch reads, but up to " +
                              std::to_string(d.repeats_max) +
                              " earlier epochs may have read nothing new "
                              "(tf.data read their batches ahead) and permuted first"
                        : "while tf.data's prefetch reads batches ahead (between " +
                              std::to_string(d.reads_min) + " and " + std::to_string(d.reads_max) +
                              " reads before it)";
  return Status::InvalidArgument(
      "model.fit(steps_per_epoch=" + std::to_string(steps()) +
      ") below len(it) = " + std::to_string(batches_per_epoch()) + ": epoch " +
      std::to_string(epoch) + "'s permutation is drawn by on_epoch_end " + why +
      ", so only a set of candidates is "
      "known (--batches lists them); only epoch 0 is exact. For every epoch exact use "
      "steps_per_epoch=len(it) (or leave it out)");
}

Result<std::vector<Index>> KerasFlow::ValidationIndexArray(uint64_t epoch) const {
  // tf.keras 2.15 training.py: DataHandler.enumerate_epochs calls the
  // adapter's on_epoch_end after the loop body, i.e. after evaluate(). The
  // validation iterator (peeked once, then M batches per pass in order)
  // last reseeded with vseed + epoch * M, drew for its batch M - 1, and its
  // own on_epoch_end drew its permutation; the training one follows.
  uint64_t n = index_.size();
  uint64_t last = *options_.seed + 1 + (epoch + 1) * batches_per_epoch() - 1;
  if (last >= kSeedLimit) {
    return Status::InvalidArgument(
        "np.random.seed(seed + total_batches_seen) = " + std::to_string(last) +
        " is >= 2^32: NumPy raises ValueError there");
  }
  uint64_t vb = options_.batch_size;
  uint64_t m = (validation_size_ + vb - 1) / vb;
  uint64_t vseed = *options_.fit_validation_seed + epoch * m;
  if (vseed >= kSeedLimit) return Status::InvalidArgument("validation seed + batches >= 2^32");
  NumpyRandomState rng(static_cast<uint32_t>(vseed));
  for (uint64_t i = (m - 1) * vb; i < validation_size_; ++i) options_.augment.Draw(rng);
  rng.Permutation(validation_size_);
  return rng.Permutation(n);
}

Result<std::vector<std::vector<Index>>> KerasFlow::EpochBatches(uint64_t epoch) const {
  auto perms = EpochPermutations(epoch);
  if (!perms.ok()) return perms.status();
  std::vector<uint64_t> positions = EpochBatchPositions(epoch);
  std::vector<std::vector<Index>> batches;
  for (const std::vector<Index>& a : perms.value()) {
    for (uint64_t k : positions) {
      uint64_t start = k * options_.batch_size;
      uint64_t end = std::min<uint64_t>(a.size(), start + options_.batch_size);
      batches.emplace_back(a.begin() + static_cast<std::ptrdiff_t>(start),
                           a.begin() + static_cast<std::ptrdiff_t>(end));
    }
  }
  return batches;
}

Result<std::vector<std::vector<Index>>> KerasFlow::PreTrainingBatches() const {
  std::vector<std::vector<Index>> out;
  if (options_.protocol != KerasFlowOptions::Protocol::kFit) return out;
  std::vector<Index> a(index_.size());
  std::iota(a.begin(), a.end(), Index{0});
  // The first __getitem__ reseeds with `seed` and draws the permutation.
  if (options_.shuffle)
    a = NumpyRandomState(static_cast<uint32_t>(*options_.seed)).Permutation(a.size());
  uint64_t pre = SpecBatches();
  for (uint64_t k = 0; k < pre; ++k) {
    uint64_t start = k * options_.batch_size;
    uint64_t end = std::min<uint64_t>(a.size(), start + options_.batch_size);
    out.emplace_back(a.begin() + static_cast<std::ptrdiff_t>(start),
                     a.begin() + static_cast<std::ptrdiff_t>(end));
  }
  return out;
}

Result<std::vector<Index>> KerasFlow::Order(uint64_t rank, uint64_t epoch) const {
  if (rank != 0) return Status::InvalidArgument("flow_from_directory has one consumer, rank 0");
  // One index array or none: the candidates of EpochBatches are no order.
  auto array = IndexArray(epoch);
  if (!array.ok()) return array.status();
  std::vector<Index> out;
  if (epoch == 0) {
    auto pre = PreTrainingBatches();
    if (!pre.ok()) return pre.status();
    for (const auto& b : pre.value()) out.insert(out.end(), b.begin(), b.end());
  }
  const std::vector<Index>& a = array.value();
  for (uint64_t k : EpochBatchPositions(epoch)) {
    uint64_t start = k * options_.batch_size;
    uint64_t end = std::min<uint64_t>(a.size(), start + options_.batch_size);
    out.insert(out.end(), a.begin() + static_cast<std::ptrdiff_t>(start),
               a.begin() + static_cast<std::ptrdiff_t>(end));
  }
  return out;
}

bool KerasFlow::every_epoch_exact() const {
  if (!batch_order_exact()) return false;
  // How an epoch's array is drawn repeats with the pass (EpochDraws): epochs
  // 1 to one past the first pass cover every case. An epoch NumPy would
  // refuse to seed decides nothing here (Order and Batches report it).
  for (uint64_t e = 1; e <= epochs_per_pass() + 1; ++e) {
    Result<Draws> d = EpochDraws(e);
    if (d.ok() && !d->exact()) return false;
  }
  return true;
}

Result<std::optional<BatchEpoch>> KerasFlow::Batches(uint64_t rank, uint64_t epoch) const {
  if (rank != 0) return Status::InvalidArgument("flow_from_directory has one consumer, rank 0");
  if (every_epoch_exact()) return std::optional<BatchEpoch>();
  auto batches = EpochBatches(epoch);
  if (!batches.ok()) return batches.status();
  uint64_t entries = 0;
  for (const auto& b : batches.value()) entries += b.size();
  if (entries > kMaxBatchEntries) {
    return Status::InvalidArgument(
        "epoch " + std::to_string(epoch) + "'s candidate batches hold " + std::to_string(entries) +
        " files in all, more than the planner indexes (" + std::to_string(kMaxBatchEntries) +
        "): too many candidate index arrays");
  }
  BatchEpoch out;
  out.batches = std::move(batches).value();
  // EpochBatches lists each candidate array's slices in turn.
  const size_t per_array = EpochBatchPositions(epoch).size();
  if (per_array > 0 && out.batches.size() > per_array) {
    for (size_t i = 0; i < out.batches.size(); ++i) {
      out.alternative.push_back(static_cast<uint32_t>(i / per_array));
    }
  }
  // The batches trained on. tf.data's read-ahead opens more (ReadAhead):
  // Keras 3 trains on them in the next epoch, which then reads as many fewer
  // new ones; tf.keras 2 never trains on them, so with steps_per_epoch below
  // len(it) the planner counts them as the next epoch's first batches.
  out.reads = BatchReads(epoch);
  if (epoch == 0) {
    // The spec batches run in index order, before fit's shuffled epoch.
    auto pre = PreTrainingBatches();
    if (!pre.ok()) return pre.status();
    out.lead = std::move(pre).value();
  }
  return std::optional<BatchEpoch>(std::move(out));
}

}  // namespace clairfs::prefetch
