#include "prefetch/keras_listing.hpp"

#include <charconv>

#include "prefetch/numpy_random.hpp"

namespace clairfs::prefetch {

namespace {
const std::vector<std::string> kKerasFormats = {".bmp", ".gif", ".jpeg", ".jpg", ".png"};
constexpr uint64_t kShuffleBufferBatches = 8;

// Python's slice semantics for samples[:-k] and samples[-k:], k = 0 included.
std::vector<std::string> SplitSubset(std::vector<std::string> paths,
                                     const KerasListingOptions& options) {
  if (options.validation_split == 0) return paths;
  auto val = static_cast<uint64_t>(options.validation_split * static_cast<double>(paths.size()));
  if (options.subset == KerasListingOptions::Subset::kTraining) {
    // samples[:-0] is empty in Python; Keras inherits that quirk.
    paths.resize(val == 0 ? 0 : paths.size() - val);
    return paths;
  }
  if (val == 0) return paths;  // samples[-0:] is everything
  return std::vector<std::string>(paths.end() - static_cast<std::ptrdiff_t>(val), paths.end());
}
}  // namespace

Result<KerasVersion> KerasVersion::Parse(std::string_view text) {
  KerasVersion v;
  const char* p = text.data();
  const char* end = p + text.size();
  auto r1 = std::from_chars(p, end, v.major);
  bool ok = r1.ec == std::errc() && r1.ptr != p && r1.ptr < end && *r1.ptr == '.';
  if (ok) {
    auto r2 = std::from_chars(r1.ptr + 1, end, v.minor);
    ok = r2.ec == std::errc() && r2.ptr != r1.ptr + 1 && (r2.ptr == end || *r2.ptr == '.');
  }
  if (!ok || v.major < 2) {
    return Status::InvalidArgument("Keras version '" + std::string(text) +
                                   "' is not of the form MAJOR.MINOR (2.x for tf.keras, 3.x)");
  }
  return v;
}

std::string KerasVersion::ToString() const {
  return std::to_string(major) + "." + std::to_string(minor);
}

Result<DatasetIndex> KerasListing(const Listing& listing, const KerasListingOptions& options) {
  if (options.seed > 0xffffffffull) {
    return Status::InvalidArgument("Keras seed " + std::to_string(options.seed) +
                                   " is outside RandomState's range [0, 2^32)");
  }
  if (!(options.validation_split >= 0 && options.validation_split < 1)) {
    return Status::InvalidArgument("Keras validation_split must be in [0, 1)");
  }
  DatasetIndex index;
  std::vector<std::string> paths;
  std::vector<uint32_t> labels;
  auto keep = [&](std::vector<std::string>& files, uint32_t label) {
    for (std::string& f : files) {
      std::string_view name = std::string_view(f).substr(f.rfind('/') + 1);
      if (!HasSuffixIgnoringCase(name, kKerasFormats)) continue;
      paths.push_back(std::move(f));
      labels.push_back(label);
    }
  };
  if (options.labels_inferred) {
    for (TopDirectory& group : GroupByTopDirectory(listing)) {
      if (options.version.SkipsHiddenClassDirs() && group.name.front() == '.') continue;
      index.classes.push_back(group.name);
      keep(group.files, static_cast<uint32_t>(index.classes.size() - 1));
    }
  } else {
    std::vector<std::string> all = FilesInWalkOrder(listing);
    keep(all, 0);
  }
  if (options.shuffle) {
    // Keras shuffles paths and labels with two RandomStates of the same seed,
    // so they stay paired.
    NumpyRandomState(static_cast<uint32_t>(options.seed)).Shuffle(paths);
    NumpyRandomState(static_cast<uint32_t>(options.seed)).Shuffle(labels);
  }
  size_t total = paths.size();
  index.paths = SplitSubset(std::move(paths), options);
  if (index.paths.empty()) {
    return Status::NotFound(
        "Keras: no images found in the directory (formats .bmp .gif .jpeg "
        ".jpg .png)");
  }
  // Labels follow the same slice as paths.
  size_t offset =
      options.subset == KerasListingOptions::Subset::kValidation ? total - index.paths.size() : 0;
  index.labels.assign(labels.begin() + static_cast<std::ptrdiff_t>(offset),
                      labels.begin() + static_cast<std::ptrdiff_t>(offset + index.paths.size()));
  return index;
}

uint64_t KerasReadWindow(const KerasListingOptions& options) {
  if (!options.version.ShufflesPathsEveryEpoch()) return 1;
  return kShuffleBufferBatches * options.batch_size;
}

}  // namespace clairfs::prefetch
