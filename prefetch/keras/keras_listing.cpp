#include "prefetch/keras/keras_listing.hpp"

#include <algorithm>
#include <charconv>
#include <map>
#include <set>

#include "prefetch/rng/numpy_random.hpp"

namespace clairfs::prefetch {

namespace {
// keras/src/utils/image_dataset_utils.py ALLOWLIST_FORMATS (same in 2.x).
const std::vector<std::string> kKerasFormats = {".bmp", ".gif", ".jpeg", ".jpg", ".png"};
constexpr uint64_t kShuffleBufferBatches = 8;

bool StartsWithDir(std::string_view path, std::string_view dir) {
  return path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 &&
         path[dir.size()] == '/';
}

// Python's slice semantics for samples[:-k] and samples[-k:], k = 0 included.
std::pair<size_t, size_t> SplitRange(size_t n, const KerasListingOptions& options) {
  if (options.validation_split == 0) return {0, n};
  auto k = static_cast<size_t>(options.validation_split * static_cast<double>(n));
  if (options.subset == KerasListingOptions::Subset::kTraining) {
    return {0, k == 0 ? 0 : n - k};  // samples[:-0] is empty in Python
  }
  return {k == 0 ? 0 : n - k, n};  // samples[-0:] is everything
}

// The class directories Keras walks, in walk order, and each one's label.
Result<std::vector<std::pair<std::string, uint32_t>>> KerasClasses(
    const std::vector<TopDirectory>& groups, const KerasListingOptions& options,
    std::vector<std::string>* class_names) {
  std::vector<std::string> subdirs;
  for (const TopDirectory& g : groups) {
    if (options.version.SkipsHiddenClassDirs() && g.name.front() == '.') continue;
    subdirs.push_back(g.name);
  }
  std::vector<std::pair<std::string, uint32_t>> out;
  // 2.x: `if not class_names` treats [] like None.
  bool given = options.class_names.has_value() &&
               (options.version.ClassNamesOrderTheWalk() || !options.class_names->empty());
  if (!given) {
    for (size_t i = 0; i < subdirs.size(); ++i) out.emplace_back(subdirs[i], i);
    *class_names = subdirs;
    return out;
  }
  const std::vector<std::string>& names = *options.class_names;
  std::set<std::string> have(subdirs.begin(), subdirs.end());
  std::set<std::string> want(names.begin(), names.end());
  bool ok = options.version.ClassNamesOrderTheWalk()
                ? std::includes(have.begin(), have.end(), want.begin(), want.end())
                : have == want;
  if (!ok) {
    std::string expected;
    for (const std::string& s : subdirs) expected += (expected.empty() ? "" : ", ") + s;
    return Status::InvalidArgument(
        "Keras: class_names do not match the class directories (" + expected + ")" +
        (options.version.ClassNamesOrderTheWalk() ? "; Keras 3 needs a subset of them"
                                                  : "; Keras 2 needs exactly this set"));
  }
  // dict(zip(class_names, range(...))): a repeated name keeps its last index.
  std::map<std::string, uint32_t> index;
  for (size_t i = 0; i < names.size(); ++i) index[names[i]] = static_cast<uint32_t>(i);
  const std::vector<std::string>& walk = options.version.ClassNamesOrderTheWalk() ? names : subdirs;
  for (const std::string& name : walk) out.emplace_back(name, index[name]);
  *class_names = names;
  return out;
}
}  // namespace

Result<KerasVersion> KerasVersion::Parse(std::string_view text) {
  KerasVersion v;
  const char* p = text.data();
  const char* end = p + text.size();
  int* parts[3] = {&v.major, &v.minor, &v.patch};
  bool ok = true;
  int count = 0;
  while (ok && count < 3) {
    auto r = std::from_chars(p, end, *parts[count]);
    ok = r.ec == std::errc() && r.ptr != p && *parts[count] >= 0;
    ++count;
    p = r.ptr;
    if (!ok || p == end) break;
    ok = *p == '.';
    ++p;
  }
  if (!ok || count < 2 || p != end || v.major < 2) {
    return Status::InvalidArgument("Keras version '" + std::string(text) +
                                   "' is not of the form MAJOR.MINOR[.PATCH] (2.x for tf.keras, "
                                   "3.x)");
  }
  return v;
}

std::string KerasVersion::ToString() const {
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

bool HiddenBySymlink(const Listing& listing, std::string_view top, std::string_view file) {
  for (const std::string& link : listing.symlinked_directories) {
    if (!top.empty() && !StartsWithDir(link, top)) continue;
    if (StartsWithDir(file, link)) return true;
  }
  return false;
}

Result<DatasetIndex> KerasListing(const Listing& listing, const KerasListingOptions& options) {
  if (options.seed > 0xffffffffull) {
    return Status::InvalidArgument("Keras seed " + std::to_string(options.seed) +
                                   " is outside RandomState's range [0, 2^32)");
  }
  if (!(options.validation_split >= 0 && options.validation_split < 1)) {
    return Status::InvalidArgument("Keras validation_split must be in [0, 1)");
  }
  bool follows = options.follow_links || options.version.WalkFollowsSymlinksByDefault();
  DatasetIndex index;
  std::vector<std::string> paths;
  std::vector<uint32_t> labels;
  auto keep = [&](const std::vector<std::string>& files, std::string_view top, uint32_t label) {
    for (const std::string& f : files) {
      std::string_view name = std::string_view(f).substr(f.rfind('/') + 1);
      if (!HasSuffixIgnoringCase(name, kKerasFormats)) continue;
      if (!follows && HiddenBySymlink(listing, top, f)) continue;
      paths.push_back(f);
      labels.push_back(label);
    }
  };
  if (options.labels_inferred) {
    std::vector<TopDirectory> groups = GroupByTopDirectory(listing);
    auto classes = KerasClasses(groups, options, &index.classes);
    if (!classes.ok()) return classes.status();
    for (const auto& [name, label] : classes.value()) {
      auto g =
          std::lower_bound(groups.begin(), groups.end(), name,
                           [](const TopDirectory& t, const std::string& n) { return t.name < n; });
      if (g != groups.end() && g->name == name) keep(g->files, name, label);
    }
  } else {
    if (options.class_names.has_value()) {
      return Status::InvalidArgument(
          "Keras: class_names cannot be given with labels other than "
          "\"inferred\"");
    }
    keep(FilesInWalkOrder(listing), "", 0);
  }
  if (options.shuffle) {
    // index_directory shuffles paths and labels with two RandomStates of the
    // same seed, so they stay paired.
    NumpyRandomState(static_cast<uint32_t>(options.seed)).Shuffle(paths);
    NumpyRandomState(static_cast<uint32_t>(options.seed)).Shuffle(labels);
  }
  auto [begin, end] = SplitRange(paths.size(), options);
  index.paths.assign(paths.begin() + static_cast<std::ptrdiff_t>(begin),
                     paths.begin() + static_cast<std::ptrdiff_t>(end));
  index.labels.assign(labels.begin() + static_cast<std::ptrdiff_t>(begin),
                      labels.begin() + static_cast<std::ptrdiff_t>(end));
  if (index.paths.empty()) {
    return Status::NotFound(
        "Keras: no images found in the directory (formats .bmp .gif .jpeg .jpg .png)");
  }
  return index;
}

uint64_t KerasReadWindow(const KerasListingOptions& options) {
  if (!options.version.ShufflesPathsEveryEpoch()) return 1;
  return kShuffleBufferBatches * options.batch_size;
}

}  // namespace clairfs::prefetch
