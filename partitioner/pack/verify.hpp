// `clairfs-partition verify OUT SRC`: decodes every file of a pack and compares
// it with the source tree, naming every difference.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.hpp"
#include "partitioner/pack/scan.hpp"

namespace clairfs::pack {

struct VerifyOptions {
  std::string out;
  std::string src;
  unsigned threads = 0;                                   // 0 = one per core
  ExternalLinks external_links = ExternalLinks::kRefuse;  // as given to pack
  bool progress = false;  // report progress on stderr (progress.hpp)
};

struct VerifyReport {
  std::vector<std::string> differences;  // empty when OUT reproduces SRC exactly
  uint64_t files = 0;                    // files compared
  uint64_t bytes = 0;                    // bytes decoded
  double seconds = 0;
};

// A non-OK status means verification could not run at all (no manifest, SRC
// unreadable); a damaged pack or any mismatch is a difference in the report.
Result<VerifyReport> Verify(const VerifyOptions& options);

}  // namespace clairfs::pack
