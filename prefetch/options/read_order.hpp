// ReadOrder: a job's predicted read order, built from its sampler settings -
// the one entry point a prefetcher (or clairfs-order) needs.
//
// OrderSpec names the sampler kind and its parameters (every field has a
// default); Build turns it and the dataset listing into a DatasetIndex (index
// -> path) plus a Sampler (rank, epoch -> indices), and, for Keras >= 3.3,
// the read window within which the true order stays. Immutable after Build;
// every const method is thread-safe.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.hpp"
#include "prefetch/keras/keras_flow.hpp"
#include "prefetch/keras/keras_listing.hpp"
#include "prefetch/order/dataset_index.hpp"
#include "prefetch/order/listing.hpp"
#include "prefetch/order/sampler.hpp"
#include "prefetch/tf/tf_data_sampler.hpp"
#include "prefetch/torch/distributed_sampler.hpp"
#include "prefetch/torch/image_folder.hpp"
#include "prefetch/torch/random_sampler.hpp"

namespace clairfs::prefetch {

enum class SamplerKind {
  kTorchDistributed,  // DistributedSampler over the dataset (default)
  kTorchRandom,       // RandomSampler with a seeded generator
  kTorchSequential,   // SequentialSampler / DataLoader(shuffle=False)
  kKeras,             // image_dataset_from_directory
  kOrderFile,         // an order file
  kTfListFiles,       // tf.data.Dataset.list_files(pattern, shuffle, seed) (tf_data_sampler.hpp)
  kKerasFlow,         // ImageDataGenerator.flow_from_directory (keras_flow.hpp)
};

// How torch kinds number the files.
enum class DatasetLayout {
  kImageFolder,  // torchvision ImageFolder / DatasetFolder (default)
  kListOrder,    // the listing's files in the order given (a custom file-list Dataset)
};

// "torch-distributed", "torch-random", "torch-sequential", "keras", "order-file",
// "tf-list-files", "keras-flow".
Result<SamplerKind> ParseSamplerKind(std::string_view name);
std::string_view SamplerKindName(SamplerKind kind);

struct OrderSpec {
  SamplerKind kind = SamplerKind::kTorchDistributed;
  DatasetLayout layout = DatasetLayout::kImageFolder;
  // Whether the layout was given. An order file without one has it inferred:
  // a path file indexes the files it names, an index file the layout its
  // indices fit (refused, naming `layout_name`, when both fit differently).
  bool layout_given = false;
  std::string layout_name = "--layout";  // the caller's name of the setting, for errors
  ImageFolderOptions image_folder;       // used by the torch kinds with kImageFolder
  DistributedSamplerOptions distributed;
  RandomSamplerOptions random;
  KerasListingOptions keras;
  KerasFlowOptions keras_flow;  // kKerasFlow
  std::string order_file;       // kOrderFile: the file to read
  // kTfListFiles; for kKeras from 3.3 on its seed.global_seed, driver,
  // steps_per_epoch and validation_same (the rest comes from `keras`).
  TfDataOptions tf;
};

class ReadOrder {
 public:
  // `listing` may be null only for kOrderFile (then a path order file brings
  // its own index and an index order file has no paths). With a listing an
  // order file's entries are resolved against the layout's DatasetIndex.
  static Result<ReadOrder> Build(const OrderSpec& spec, const Listing* listing);

  const DatasetIndex& dataset() const { return *dataset_; }
  const Sampler& sampler() const { return *sampler_; }
  // 1: the order is exact (every generated order now). W > 1: the next open
  // is among the next W unread files of the epoch's order; use ReadWindow.
  uint64_t window() const { return window_; }
  // True when dataset() maps indices to paths (false only for an index order
  // file without a listing).
  bool has_paths() const { return dataset_->paths.size() == sampler_->dataset_size(); }

  // Epochs an order file covers for `rank`; empty for generated orders, which
  // cover every epoch.
  const std::vector<uint64_t>& order_file_epochs(uint64_t rank) const;

  // The files rank `rank` opens in epoch `epoch`, in order.
  Result<std::vector<std::string>> Paths(uint64_t rank, uint64_t epoch) const;

 private:
  ReadOrder() = default;

  std::shared_ptr<const DatasetIndex> dataset_;
  std::shared_ptr<const Sampler> sampler_;
  uint64_t window_ = 1;
  std::vector<std::vector<uint64_t>> order_file_epochs_;  // by rank
};

}  // namespace clairfs::prefetch
