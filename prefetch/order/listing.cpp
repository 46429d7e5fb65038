#include "prefetch/order/listing.hpp"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <set>
#include <utility>

namespace clairfs::prefetch {

namespace {

// A file path cut into the parts the walk order compares.
struct WalkKey {
  std::string_view top;   // first component ("" for a root-level file)
  std::string_view dir;   // containing directory, relative to the root
  std::string_view name;  // last component
  size_t position;        // into the files vector
};

WalkKey MakeKey(const std::string& path, size_t position) {
  WalkKey key;
  std::string_view p = path;
  size_t last = p.rfind('/');
  size_t first = p.find('/');
  key.dir = last == std::string_view::npos ? std::string_view() : p.substr(0, last);
  key.name = last == std::string_view::npos ? p : p.substr(last + 1);
  key.top = first == std::string_view::npos ? std::string_view() : p.substr(0, first);
  key.position = position;
  return key;
}

// string_view comparison is char_traits<char>::compare: unsigned bytes, like memcmp.
bool WalkLess(const WalkKey& a, const WalkKey& b) {
  if (a.top != b.top) return a.top < b.top;
  if (a.dir != b.dir) return a.dir < b.dir;
  return a.name < b.name;
}

std::vector<WalkKey> SortedKeys(const Listing& listing, bool group_by_top) {
  std::vector<WalkKey> keys;
  keys.reserve(listing.files.size());
  for (size_t i = 0; i < listing.files.size(); ++i) {
    keys.push_back(MakeKey(listing.files[i], i));
    if (!group_by_top) keys.back().top = std::string_view();
  }
  std::stable_sort(keys.begin(), keys.end(), WalkLess);
  return keys;
}

std::string_view FirstComponent(std::string_view path) { return path.substr(0, path.find('/')); }

struct Scanner {
  std::string root;
  Listing out;
  std::vector<std::pair<dev_t, ino_t>> ancestors;  // the directories being walked

  Status Walk(const std::string& rel, const struct stat& self) {
    for (const auto& a : ancestors) {
      if (a.first == self.st_dev && a.second == self.st_ino) {
        return Status::InvalidArgument("symlink cycle: " + root + "/" + rel +
                                       " is one of its own ancestors");
      }
    }
    std::string abs = rel.empty() ? root : root + "/" + rel;
    DIR* dir = opendir(abs.c_str());
    if (dir == nullptr) return Status::FromErrno(errno, "cannot list " + abs);
    std::vector<std::string> names;
    errno = 0;
    while (struct dirent* e = readdir(dir)) {
      std::string name = e->d_name;
      if (name != "." && name != "..") names.push_back(std::move(name));
    }
    int read_err = errno;
    closedir(dir);
    if (read_err != 0) return Status::FromErrno(read_err, "cannot list " + abs);
    std::sort(names.begin(), names.end());

    ancestors.emplace_back(self.st_dev, self.st_ino);
    bool has_subdir_or_file = !names.empty();
    for (const std::string& name : names) {
      std::string child_rel = rel.empty() ? name : rel + "/" + name;
      std::string child_abs = abs + "/" + name;
      struct stat st;
      // stat follows symlinks; one that leads nowhere is a file to os.walk.
      if (stat(child_abs.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
        struct stat link_st;
        if (lstat(child_abs.c_str(), &link_st) == 0 && S_ISLNK(link_st.st_mode)) {
          out.symlinked_directories.push_back(child_rel);
        }
        CLAIRFS_RETURN_IF_ERROR(Walk(child_rel, st));
      } else {
        out.files.push_back(std::move(child_rel));
      }
    }
    ancestors.pop_back();
    if (!has_subdir_or_file && !rel.empty()) out.directories.push_back(rel);
    return Status::Ok();
  }
};

}  // namespace

Status ValidateRelativePath(std::string_view path) {
  auto bad = [&](const char* why) {
    return Status::InvalidArgument("path '" + std::string(path) + "' " + why);
  };
  if (path.empty()) return bad("is empty");
  if (path.front() == '/') return bad("is absolute; paths are relative to the dataset root");
  if (path.back() == '/') return bad("ends with '/'");
  if (path.find('\0') != std::string_view::npos) return bad("contains a NUL byte");
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    std::string_view part = path.substr(start, end - start);
    if (part.empty()) return bad("has an empty component ('//')");
    if (part == "." || part == "..") return bad("has a '.' or '..' component");
    start = end + 1;
  }
  return Status::Ok();
}

Result<Listing> ListingFromPaths(const std::vector<std::string>& paths) {
  Listing listing;
  for (const std::string& p : paths) {
    bool is_dir = !p.empty() && p.back() == '/';
    std::string clean = is_dir ? p.substr(0, p.size() - 1) : p;
    CLAIRFS_RETURN_IF_ERROR(ValidateRelativePath(clean));
    (is_dir ? listing.directories : listing.files).push_back(std::move(clean));
  }
  return listing;
}

Result<Listing> ReadListingFile(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return Status::FromErrno(errno, "cannot open listing " + file);
  std::vector<std::string> paths;
  std::string line;
  size_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty()) continue;
    paths.push_back(line);
    Status st = ValidateRelativePath(line.back() == '/' ? line.substr(0, line.size() - 1) : line);
    if (!st.ok()) {
      return Status::InvalidArgument(file + ":" + std::to_string(line_no) + ": " + st.message());
    }
  }
  if (in.bad()) return Status::IOError("cannot read listing " + file);
  return ListingFromPaths(paths);
}

Result<Listing> ScanDirectory(const std::string& root) {
  struct stat st;
  if (stat(root.c_str(), &st) != 0) return Status::FromErrno(errno, "dataset root " + root);
  if (!S_ISDIR(st.st_mode))
    return Status::InvalidArgument("dataset root " + root + " is not a directory");
  Scanner scanner;
  scanner.root = root;
  while (scanner.root.size() > 1 && scanner.root.back() == '/') scanner.root.pop_back();
  CLAIRFS_RETURN_IF_ERROR(scanner.Walk("", st));
  return std::move(scanner.out);
}

std::vector<TopDirectory> GroupByTopDirectory(const Listing& listing) {
  std::set<std::string_view> tops;
  for (const std::string& d : listing.directories) tops.insert(FirstComponent(d));
  for (const std::string& f : listing.files) {
    if (f.find('/') != std::string::npos) tops.insert(FirstComponent(f));
  }
  std::vector<TopDirectory> groups;
  groups.reserve(tops.size());
  for (std::string_view t : tops) groups.push_back(TopDirectory{std::string(t), {}});

  size_t g = 0;
  for (const WalkKey& key : SortedKeys(listing, /*group_by_top=*/true)) {
    if (key.top.empty()) continue;          // root-level file
    while (groups[g].name != key.top) ++g;  // both sequences are sorted the same way
    groups[g].files.push_back(listing.files[key.position]);
  }
  return groups;
}

std::vector<std::string> FilesInWalkOrder(const Listing& listing) {
  std::vector<std::string> out;
  out.reserve(listing.files.size());
  for (const WalkKey& key : SortedKeys(listing, /*group_by_top=*/false)) {
    out.push_back(listing.files[key.position]);
  }
  return out;
}

bool HasSuffixIgnoringCase(std::string_view name, const std::vector<std::string>& suffixes) {
  for (const std::string& s : suffixes) {
    if (s.size() > name.size()) continue;
    std::string_view tail = name.substr(name.size() - s.size());
    bool match = true;
    for (size_t i = 0; i < s.size() && match; ++i) {
      char c = tail[i];
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
      match = c == s[i];
    }
    if (match) return true;
  }
  return false;
}

}  // namespace clairfs::prefetch
