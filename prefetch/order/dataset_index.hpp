// DatasetIndex: how a framework numbers the files of a dataset.
//
// paths[i] is the file (relative to the dataset root) that dataset index i
// loads; labels[i] its class index into `classes`. Built by ImageFolderIndex
// (image_folder.hpp) or KerasListing (keras_listing.hpp), or taken from an
// order file. Value type; thread-compatible.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace clairfs::prefetch {

struct DatasetIndex {
  std::vector<std::string> paths;
  std::vector<uint32_t> labels;      // same length as paths (0 when unlabelled)
  std::vector<std::string> classes;  // class names by class index

  uint64_t size() const { return paths.size(); }
};

}  // namespace clairfs::prefetch
