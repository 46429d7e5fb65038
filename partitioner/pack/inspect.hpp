// `clairfs-partition inspect OUT [--json]`: what a pack holds and how it is
// spread over its partitions.
#pragma once

#include <string>

#include "partitioner/format/manifest.hpp"

namespace clairfs::pack {

// A human-readable report, or one JSON object when `json` is set.
std::string InspectReport(const format::Manifest& manifest, const std::string& out, bool json,
                          size_t largest = 10);

}  // namespace clairfs::pack
