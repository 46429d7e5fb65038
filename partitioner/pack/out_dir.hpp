// Preparing and cleaning the output directory of a pack run.
#pragma once

#include <string>

#include "base/status.hpp"

namespace clairfs::pack {

// Checks that OUT is neither SRC nor inside it, and makes OUT ready for a new
// pack: created if missing; if it exists, refused unless `force`, and with
// `force` only if it holds nothing but a previous pack run's files, which are
// then removed (the manifest first, so nothing looks valid in between).
// Sets *created when this call made the directory.
Status PrepareOutDir(const std::string& src, const std::string& out, bool force, bool* created);

// Removes the files a failed run wrote (packs, temporary manifest) and OUT
// itself if this run created it and it is now empty.
void RemovePartialOutput(const std::string& out, bool created);

// True for names a pack run writes: manifest, part-*, the temporary manifest.
bool IsPackOutputName(const std::string& name);

}  // namespace clairfs::pack
