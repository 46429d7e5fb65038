// TfMatchingFiles: tf.io.matching_files / Dataset.list_files over a Listing.
//
// tensorflow/core/platform/file_system_helper.cc GetMatchingPaths walks the
// directories named by the pattern and keeps every entry - file or directory
// - whose full path matches the pattern under fnmatch(pattern, path,
// FNM_PATHNAME) (Env::MatchPath, tensorflow/core/platform/posix/env.cc); the
// MatchingFiles op (tensorflow/core/kernels/matching_files_op.cc) returns them
// sorted by bytes. So per '/'-separated component: `*` any run of characters,
// including a leading dot, `?` one character, `[...]` a set with ranges and
// `!`/`^` negation, `\` escapes the next character; `**` is just `*`; there is
// no `{a,b}`. Characters are UTF-8 code points (Python runs in a UTF-8
// locale). Checked against TF 2.15.1 and 2.21.0.
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.hpp"
#include "prefetch/order/listing.hpp"

namespace clairfs::prefetch {

// fnmatch of one path component (no '/').
bool TfGlobMatchComponent(std::string_view pattern, std::string_view name);

// The listing's paths (files and directories, relative to the root) that
// `pattern` (relative to the same root) matches, byte-sorted. InvalidArgument
// for an empty or absolute pattern; NotFound when nothing matches (list_files
// raises "No files matched pattern").
Result<std::vector<std::string>> TfMatchingFiles(const Listing& listing, std::string_view pattern);

}  // namespace clairfs::prefetch
