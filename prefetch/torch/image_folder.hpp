// ImageFolderIndex: the sample order of torchvision.datasets.ImageFolder /
// DatasetFolder (torchvision 0.14 and later).
//
// Classes are the root's directories (hidden names kept, symlinks already
// followed by the listing), sorted; each class contributes its files in walk
// order (listing.hpp) whose lower-cased names end in one of the extensions.
// Errors, as torchvision raises FileNotFoundError: NotFound when the root has
// no class directory, or when a class has no valid file (unless allow_empty).
// Thread-safe (pure function).
#pragma once

#include <string>
#include <vector>

#include "base/status.hpp"
#include "prefetch/order/dataset_index.hpp"
#include "prefetch/order/listing.hpp"

namespace clairfs::prefetch {

struct ImageFolderOptions {
  // torchvision's IMG_EXTENSIONS; lower case, leading dot.
  std::vector<std::string> extensions = {".jpg", ".jpeg", ".png",  ".ppm", ".bmp",
                                         ".pgm", ".tif",  ".tiff", ".webp"};
  // DatasetFolder(allow_empty=True) (torchvision >= 0.17); default false.
  bool allow_empty = false;
};

Result<DatasetIndex> ImageFolderIndex(const Listing& listing,
                                      const ImageFolderOptions& options = {});

}  // namespace clairfs::prefetch
