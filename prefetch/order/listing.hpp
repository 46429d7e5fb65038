// Listing: a dataset's namespace as relative paths, from a real directory tree
// or from memory (the daemon's manifest), and the directory-walk order that
// torchvision and Keras derive from it.
//
// Paths are relative to the dataset root, '/'-separated, without empty, "."
// or ".." components. A directory that holds no file at any depth must be
// listed explicitly (it can matter: torchvision refuses an empty class);
// every other directory is implied by its files. ScanDirectory follows
// symbolic links the way os.walk(followlinks=True) does. Value types;
// thread-compatible. Free functions are thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.hpp"

namespace clairfs::prefetch {

struct Listing {
  std::vector<std::string> files;        // every non-directory entry
  std::vector<std::string> directories;  // optional; empty ones are the ones that matter
  // Symbolic links to directories that the scan walked through (ScanDirectory
  // fills it; empty for a manifest). A walk that does not follow links
  // (os.walk(followlinks=False)) skips every file below one of these.
  std::vector<std::string> symlinked_directories;
};

// InvalidArgument naming the path when it is not a clean relative path.
Status ValidateRelativePath(std::string_view path);

// Builds a Listing from paths in which a trailing '/' marks a directory
// (the format of `clairfs-order --listing`). Validates every path.
Result<Listing> ListingFromPaths(const std::vector<std::string>& paths);

// Reads such paths from a text file, one per line; blank lines are skipped.
Result<Listing> ReadListingFile(const std::string& file);

// Walks the tree under `root`, following symlinks: a symlink to a directory is
// walked as a directory, anything else that is not a directory (a regular
// file, a broken symlink, a FIFO) is a file, as os.walk classifies it.
// Errors: NotFound/IOError naming the path when root or a directory below it
// cannot be read (os.walk would skip such a directory silently; a prediction
// that silently differs is worse), InvalidArgument on a symlink cycle.
Result<Listing> ScanDirectory(const std::string& root);

// Files of one top-level directory, `top/` prefix kept, in walk order.
struct TopDirectory {
  std::string name;
  std::vector<std::string> files;
};

// Every top-level directory (explicit or implied, hidden names included),
// sorted by bytes, each with its files in the order of `sorted(os.walk(dir))`
// with every directory's file names sorted: by containing directory path,
// then by name, byte-wise (Python's str order for UTF-8 names).
// Root-level files belong to no group.
std::vector<TopDirectory> GroupByTopDirectory(const Listing& listing);

// All files, root-level ones included, in the walk order of the whole tree.
std::vector<std::string> FilesInWalkOrder(const Listing& listing);

// True when the ASCII-lower-cased `name` ends with one of `suffixes`.
bool HasSuffixIgnoringCase(std::string_view name, const std::vector<std::string>& suffixes);

}  // namespace clairfs::prefetch
