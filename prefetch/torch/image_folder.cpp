#include "prefetch/torch/image_folder.hpp"

namespace clairfs::prefetch {

Result<DatasetIndex> ImageFolderIndex(const Listing& listing, const ImageFolderOptions& options) {
  std::vector<TopDirectory> groups = GroupByTopDirectory(listing);
  if (groups.empty()) {
    return Status::NotFound("ImageFolder: no class directory in the dataset root");
  }
  DatasetIndex index;
  std::string empty_classes;
  for (uint32_t c = 0; c < groups.size(); ++c) {
    index.classes.push_back(groups[c].name);
    size_t before = index.paths.size();
    for (std::string& f : groups[c].files) {
      std::string_view name = std::string_view(f).substr(f.rfind('/') + 1);
      if (!HasSuffixIgnoringCase(name, options.extensions)) continue;
      index.paths.push_back(std::move(f));
      index.labels.push_back(c);
    }
    if (index.paths.size() == before) {
      empty_classes += (empty_classes.empty() ? "" : ", ") + groups[c].name;
    }
  }
  if (!empty_classes.empty() && !options.allow_empty) {
    return Status::NotFound("ImageFolder: found no valid file for the classes " + empty_classes);
  }
  return index;
}

}  // namespace clairfs::prefetch
