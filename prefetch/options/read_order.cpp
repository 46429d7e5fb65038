#include "prefetch/options/read_order.hpp"

#include <algorithm>
#include <array>
#include <optional>
#include <string_view>
#include <unordered_set>
#include <utility>

#include "prefetch/order/order_file.hpp"
#include "prefetch/order/order_file_sampler.hpp"
#include "prefetch/order/sequential_sampler.hpp"
#include "prefetch/tf/tf_glob.hpp"

namespace clairfs::prefetch {

namespace {
constexpr std::array<std::pair<std::string_view, SamplerKind>, 7> kKinds = {{
    {"torch-distributed", SamplerKind::kTorchDistributed},
    {"torch-random", SamplerKind::kTorchRandom},
    {"torch-sequential", SamplerKind::kTorchSequential},
    {"keras", SamplerKind::kKeras},
    {"order-file", SamplerKind::kOrderFile},
    {"tf-list-files", SamplerKind::kTfListFiles},
    {"keras-flow", SamplerKind::kKerasFlow},
}};

Result<DatasetIndex> TorchIndex(const OrderSpec& spec, const Listing& listing) {
  if (spec.layout == DatasetLayout::kImageFolder)
    return ImageFolderIndex(listing, spec.image_folder);
  DatasetIndex index;
  index.paths = listing.files;
  index.labels.assign(index.paths.size(), 0);
  return index;
}

// The dataset an order file's entries name, over `listing`: the given layout's;
// without one, nullopt for a path file (the files it names are the dataset,
// whatever the tree looks like), and for an index file the layout its indices
// fit, refused when both fit and order the files differently.
Result<std::optional<DatasetIndex>> OrderFileIndex(const OrderSpec& given, const Listing& listing,
                                                   const OrderFile& file) {
  OrderSpec spec = given;
  const std::string setting = spec.layout == DatasetLayout::kImageFolder ? "image-folder" : "list";
  if (!file.layout.empty()) {  // the file's "# layout"
    if (spec.layout_given && file.layout != setting) {
      return Status::InvalidArgument("order file: it declares '# layout " + file.layout + "', " +
                                     spec.layout_name + " says " + setting);
    }
    spec.layout = file.layout == "list" ? DatasetLayout::kListOrder : DatasetLayout::kImageFolder;
    spec.layout_given = true;
  }
  if (spec.layout_given) {
    Result<DatasetIndex> index = TorchIndex(spec, listing);
    if (!index.ok()) {
      return Status::InvalidArgument("order file: " +
                                     (file.layout.empty() ? spec.layout_name + " " + setting
                                                          : "'# layout " + file.layout + "'") +
                                     ": " + index.status().message());
    }
    return std::optional<DatasetIndex>(std::move(index).value());
  }
  if (file.entries == OrderFile::Entries::kPaths) {
    // Each path must be a file of the dataset.
    std::unordered_set<std::string_view> files(listing.files.begin(), listing.files.end());
    for (const auto& [key, section] : file.sections) {
      for (const std::string& p : section.paths) {
        if (!files.contains(p)) {
          return Status::NotFound("order file epoch " + std::to_string(key.first) + " rank " +
                                  std::to_string(key.second) + ": '" + p +
                                  "' is not a file of the dataset");
        }
      }
    }
    return std::optional<DatasetIndex>();
  }
  Index needed = 0;
  for (const auto& [key, section] : file.sections) {
    for (Index i : section.indices) needed = std::max(needed, i + 1);
  }
  OrderSpec as_list = spec;
  as_list.layout = DatasetLayout::kListOrder;
  DatasetIndex list = TorchIndex(as_list, listing).value();
  Result<DatasetIndex> folder = ImageFolderIndex(listing, spec.image_folder);
  const bool folder_fits = folder.ok() && needed <= folder->size();
  const bool list_fits = needed <= list.size();
  if (folder_fits && (!list_fits || folder->paths == list.paths)) {
    return std::optional<DatasetIndex>(std::move(folder).value());
  }
  if (list_fits && !folder_fits) return std::optional<DatasetIndex>(std::move(list));
  const std::string folder_size = folder.ok()
                                      ? std::to_string(folder->size()) + " as image-folder samples"
                                      : "no image-folder samples: " + folder.status().message();
  if (!list_fits) {
    return Status::InvalidArgument("order file: index " + std::to_string(needed - 1) +
                                   " is outside the dataset (" + std::to_string(list.size()) +
                                   " files; " + folder_size + ")");
  }
  return Status::InvalidArgument("order file: its indices (up to " + std::to_string(needed - 1) +
                                 ") fit the dataset both as image-folder samples (" +
                                 std::to_string(folder->size()) + ") and as its file list (" +
                                 std::to_string(list.size()) +
                                 "), which order the files differently: set " + spec.layout_name +
                                 " to image-folder or list, or write '# layout' into the file");
}

// keras/src/utils/image_dataset_utils.py (3.3.0 and later, read in 3.3.2,
// 3.3.3 and 3.15.1): paths_and_labels_to_dataset shuffles the listing's paths
// with ds.shuffle(buffer_size=8 * batch_size, or 1024 when batch_size is None,
// seed=seed) before the parallel map that opens them, then batches.
TfDataOptions KerasTfOptions(const OrderSpec& spec) {
  TfDataOptions t = spec.tf;
  t.seed.op_seed = static_cast<int64_t>(spec.keras.seed);
  t.shuffle = true;
  t.reshuffle_each_iteration = true;
  t.batch_size = spec.keras.batch_size;  // 0 = None
  t.buffer_size = spec.keras.batch_size == 0 ? 1024 : 8 * spec.keras.batch_size;
  t.num_shards = 1;
  t.shard_before_shuffle = false;
  return t;
}

template <typename S>
std::shared_ptr<const Sampler> Share(Result<S>&& sampler) {
  return std::make_shared<const S>(std::move(sampler).value());
}
}  // namespace

Result<SamplerKind> ParseSamplerKind(std::string_view name) {
  for (const auto& [text, kind] : kKinds) {
    if (text == name) return kind;
  }
  return Status::InvalidArgument(
      "unknown sampler '" + std::string(name) +
      "' (expected torch-distributed, torch-random, "
      "torch-sequential, keras, keras-flow, order-file or tf-list-files)");
}

std::string_view SamplerKindName(SamplerKind kind) {
  for (const auto& [text, k] : kKinds) {
    if (k == kind) return text;
  }
  return "?";
}

Result<ReadOrder> ReadOrder::Build(const OrderSpec& spec, const Listing* listing) {
  ReadOrder out;
  if (spec.kind == SamplerKind::kOrderFile) {
    Result<OrderFile> file = ReadOrderFile(spec.order_file);
    if (!file.ok()) return file.status();
    std::shared_ptr<DatasetIndex> dataset;
    if (listing != nullptr) {
      Result<std::optional<DatasetIndex>> index = OrderFileIndex(spec, *listing, file.value());
      if (!index.ok()) return index.status();
      if (index->has_value()) dataset = std::make_shared<DatasetIndex>(std::move(**index));
    }
    Result<OrderFileSampler> sampler = OrderFileSampler::Create(file.value(), dataset.get());
    if (!sampler.ok()) return sampler.status();
    if (!dataset) dataset = std::make_shared<DatasetIndex>(sampler.value().own_index());
    out.order_file_epochs_.resize(sampler.value().world_size());
    for (uint64_t r = 0; r < out.order_file_epochs_.size(); ++r) {
      out.order_file_epochs_[r] = sampler.value().EpochsOf(r);
    }
    out.dataset_ = std::move(dataset);
    out.sampler_ = Share(std::move(sampler));
    return out;
  }

  if (listing == nullptr) {
    return Status::InvalidArgument("sampler " + std::string(SamplerKindName(spec.kind)) +
                                   " needs the dataset listing");
  }
  if (spec.kind == SamplerKind::kKeras) {
    Result<DatasetIndex> index = KerasListing(*listing, spec.keras);
    if (!index.ok()) return index.status();
    out.dataset_ = std::make_shared<const DatasetIndex>(std::move(index).value());
    if (spec.keras.version.ShufflesPathsEveryEpoch()) {  // exact: window stays 1
      if (!spec.keras.shuffle) {
        out.sampler_ = std::make_shared<const SequentialSampler>(out.dataset_->size());
        return out;
      }
      Result<TfDataSampler> s = TfDataSampler::Create(out.dataset_->size(), KerasTfOptions(spec));
      if (!s.ok()) return s.status();
      out.sampler_ = Share(std::move(s));
      return out;
    }
    out.sampler_ = std::make_shared<const SequentialSampler>(out.dataset_->size());
    out.window_ = KerasReadWindow(spec.keras);
    return out;
  }
  if (spec.kind == SamplerKind::kTfListFiles) {
    Result<std::vector<std::string>> matches = TfMatchingFiles(*listing, spec.tf.glob);
    if (!matches.ok()) return matches.status();
    DatasetIndex index;
    index.paths = std::move(matches).value();
    index.labels.assign(index.paths.size(), 0);
    out.dataset_ = std::make_shared<const DatasetIndex>(std::move(index));
    Result<TfDataSampler> s = TfDataSampler::Create(out.dataset_->size(), spec.tf);
    if (!s.ok()) return s.status();
    out.sampler_ = Share(std::move(s));
    return out;
  }

  if (spec.kind == SamplerKind::kKerasFlow) {
    Result<KerasFlow> flow = KerasFlow::Create(*listing, spec.keras_flow);
    if (!flow.ok()) return flow.status();
    out.dataset_ = std::make_shared<const DatasetIndex>(flow.value().index());
    out.sampler_ = Share(std::move(flow));
    return out;
  }

  Result<DatasetIndex> index = TorchIndex(spec, *listing);
  if (!index.ok()) return index.status();
  uint64_t n = index.value().size();
  out.dataset_ = std::make_shared<const DatasetIndex>(std::move(index).value());
  switch (spec.kind) {
    case SamplerKind::kTorchDistributed: {
      auto s = DistributedSampler::Create(n, spec.distributed);
      if (!s.ok()) return s.status();
      out.sampler_ = Share(std::move(s));
      break;
    }
    case SamplerKind::kTorchRandom: {
      auto s = TorchRandomSampler::Create(n, spec.random);
      if (!s.ok()) return s.status();
      out.sampler_ = Share(std::move(s));
      break;
    }
    default:
      out.sampler_ = std::make_shared<const SequentialSampler>(n);
      break;
  }
  return out;
}

const std::vector<uint64_t>& ReadOrder::order_file_epochs(uint64_t rank) const {
  static const std::vector<uint64_t> kNone;
  return rank < order_file_epochs_.size() ? order_file_epochs_[rank] : kNone;
}

Result<std::vector<std::string>> ReadOrder::Paths(uint64_t rank, uint64_t epoch) const {
  if (!has_paths()) {
    return Status::InvalidArgument("the order has dataset indices but no paths (give a listing)");
  }
  Result<std::vector<Index>> order = sampler_->Order(rank, epoch);
  if (!order.ok()) return order.status();
  std::vector<std::string> paths;
  paths.reserve(order.value().size());
  for (Index i : order.value()) paths.push_back(dataset_->paths[i]);
  return paths;
}

}  // namespace clairfs::prefetch
