// KerasListing: the file order of keras.utils.image_dataset_from_directory
// (tf.keras 2.x and Keras 3.x), and the rule that bounds the read order.
//
// Rules read from keras/src/utils/dataset_utils.py (index_directory,
// iter_valid_files, get_training_or_validation_split) and
// image_dataset[_utils].py of keras 2.13.1, 2.15.0, 3.0.5, 3.2.1, 3.3.0,
// 3.3.2, 3.3.3, 3.11.3, 3.12.0 and 3.15.1:
// - classes (labels="inferred"): the root's entries that are directories
//   (symlinks followed), sorted; names starting with '.' skipped from 2.14 on.
//   Given class_names: 2.x requires the same set and keeps the sorted walk
//   (class_names only renumbers labels); 3.x requires a subset and walks the
//   classes in the given order.
// - each class (or the whole root for labels=None / a label list) walked
//   sorted by directory path, files sorted within a directory, kept when the
//   lower-cased name ends in .bmp .gif .jpeg .jpg .png. follow_links=False (the
//   default) walks with tf.io.gfile.walk up to 3.11, which still descends into
//   symlinked subdirectories, and with os.walk from 3.12, which does not.
// - numpy RandomState(seed).shuffle(paths) when shuffle, then the split:
//   training = paths[:-k], validation = paths[-k:], k = int(split * n).
// Up to Keras 3.2 the decoded images go through the tf.data shuffle, so files
// are opened in exactly this order every epoch. From 3.3.0 on the paths
// themselves go through a tf.data shuffle buffer (8 x batch_size, 1024
// without batching) every epoch (3.3.0-3.3.2 shuffle paths alone, 3.3.3 on
// (path, label) pairs: the same order). Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.hpp"
#include "prefetch/order/dataset_index.hpp"
#include "prefetch/order/listing.hpp"

namespace clairfs::prefetch {

// A Keras release: tf.keras 2.x or Keras 3.x, MAJOR.MINOR[.PATCH].
struct KerasVersion {
  int major = 3;  // default: the newest line checked against the real library
  int minor = 15;
  int patch = 0;

  static Result<KerasVersion> Parse(std::string_view text);
  std::string ToString() const;
  auto operator<=>(const KerasVersion&) const = default;

  bool SkipsHiddenClassDirs() const { return *this >= KerasVersion{2, 14, 0}; }
  // keras-3.3.0 image_dataset_utils.py: path_ds.shuffle(...) before the load.
  bool ShufflesPathsEveryEpoch() const { return *this >= KerasVersion{3, 3, 0}; }
  // keras-3.12.0 dataset_utils.py: os.walk instead of tf.io.gfile.walk.
  bool WalkFollowsSymlinksByDefault() const { return *this < KerasVersion{3, 12, 0}; }
  // 3.x: class_names may be a subset and sets the walk order.
  bool ClassNamesOrderTheWalk() const { return major >= 3; }
};

struct KerasListingOptions {
  KerasVersion version{};  // default 3.15 (the newest supported; 2.15 is the last tf.keras 2)
  // Keras' `seed`; RandomState accepts [0, 2^32). Keras draws one from the
  // global NumPy generator when it is None, which makes the order
  // unpredictable: it must be given.
  uint64_t seed = 0;
  bool shuffle = true;          // image_dataset_from_directory's default
  bool labels_inferred = true;  // labels="inferred"; false (None or a list) walks the root
  std::optional<std::vector<std::string>> class_names;  // class_names=[...]
  bool follow_links = false;                            // follow_links=
  double validation_split = 0;                          // 0 = no split
  enum class Subset { kTraining, kValidation } subset = Subset::kTraining;
  uint64_t batch_size = 32;  // only sets the read window for Keras >= 3.3
};

// The base order as a DatasetIndex (index i = i-th path Keras yields).
// InvalidArgument for a seed >= 2^32, a split outside [0, 1) or class_names
// that Keras rejects; NotFound when no image remains ("No images found").
Result<DatasetIndex> KerasListing(const Listing& listing, const KerasListingOptions& options);

// The window of the base order within which reads happen: 8 x batch_size for
// Keras >= 3.3, 1 (the exact order) before.
uint64_t KerasReadWindow(const KerasListingOptions& options);

// True when `file` lies below a symlinked directory strictly deeper than the
// walk's top directory `top` ("" = the root): os.walk(followlinks=False)
// never reaches it. Shared with keras_flow.
bool HiddenBySymlink(const Listing& listing, std::string_view top, std::string_view file);

}  // namespace clairfs::prefetch
