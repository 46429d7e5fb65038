// KerasListing: the file order of keras.utils.image_dataset_from_directory
// (tf.keras 2.x and Keras 3.x), and the rule that bounds the read order.
//
// Listing: class directories sorted (hidden ones skipped from Keras 2.14 on),
// each walked in walk order (listing.hpp) keeping .bmp .gif .jpeg .jpg .png
// (any case), concatenated, then numpy RandomState(seed).shuffle(paths) and
// the optional validation split. Up to Keras 3.2 files are decoded before the
// shuffle buffer, so every epoch opens them in exactly this order. From 3.3 on
// the paths themselves go through a tf.data shuffle buffer of 8 x batch_size
// each epoch: the exact order is unknowable, but the next open is always among
// the next `window` not-yet-read files of this base order (see ReadWindow).
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "partitioner/format/status.hpp"
#include "prefetch/dataset_index.hpp"
#include "prefetch/listing.hpp"

namespace clairfs::prefetch {

// A Keras release: tf.keras 2.x or Keras 3.x, compared by (major, minor).
struct KerasVersion {
  int major = 2;
  int minor = 15;

  static Result<KerasVersion> Parse(std::string_view text);
  std::string ToString() const;
  auto operator<=>(const KerasVersion&) const = default;

  bool SkipsHiddenClassDirs() const { return *this >= KerasVersion{2, 14}; }
  bool ShufflesPathsEveryEpoch() const { return *this >= KerasVersion{3, 3}; }
};

struct KerasListingOptions {
  KerasVersion version{};  // default 2.15 (the last tf.keras 2)
  // Keras' `seed`; RandomState accepts [0, 2^32). Keras draws one at random
  // when it is None, which makes the order unpredictable: it must be given.
  uint64_t seed = 0;
  bool shuffle = true;          // image_dataset_from_directory's default
  bool labels_inferred = true;  // labels="inferred"; false walks the whole root as one
  double validation_split = 0;  // 0 = no split
  enum class Subset { kTraining, kValidation } subset = Subset::kTraining;
  uint64_t batch_size = 32;  // only sets the read window for Keras >= 3.3
};

// The base order as a DatasetIndex (index i = i-th path Keras yields).
// InvalidArgument for a seed >= 2^32 or a split outside [0, 1); NotFound when
// no image remains ("No images found in directory").
Result<DatasetIndex> KerasListing(const Listing& listing, const KerasListingOptions& options);

// The window of the base order within which reads happen: 8 x batch_size for
// Keras >= 3.3, 1 (the exact order) before.
uint64_t KerasReadWindow(const KerasListingOptions& options);

}  // namespace clairfs::prefetch
