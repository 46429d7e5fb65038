// `clairfs-partition pack`: a source tree into OUT/manifest + OUT/part-*.
//
// Files are read and encoded by `threads` workers in parallel, as many at once
// as `memory` holds (a larger file alone), and appended to their pack in
// manifest order, so two runs over the same tree lay out the same packs. Packs are fsync'ed before
// the manifest is written (atomically, last), so an interrupted or failed run never leaves a
// manifest behind; on failure the packs written so far are removed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.hpp"
#include "partitioner/format/layout.hpp"
#include "partitioner/pack/scan.hpp"

namespace clairfs::pack {

struct PackOptions {
  std::string src;          // source directory
  std::string out;          // output directory (created)
  uint32_t partitions = 0;  // P >= 1; required
  uint32_t replicas = 1;    // copies of each partition the daemons keep
  int zstd_level = 3;       // 0 = no compression
  uint32_t frame_size = format::kDefaultFrameSize;
  double min_saving = 0.05;            // compressed copy kept only if it saves this fraction
  std::string placement = "balanced";  // balanced | hash | contiguous
  std::vector<std::string> broadcast;  // globs of files stored once for every node
  unsigned threads = 0;                // 0 = two per core; else 1..kMaxThreads
  // Memory the files being read and encoded may hold at once (each about
  // twice its size); a file larger than this is packed alone. >= 1 MiB.
  uint64_t memory = uint64_t{1} << 30;
  bool force = false;                                     // replace an existing OUT
  ExternalLinks external_links = ExternalLinks::kRefuse;  // links leaving SRC
  bool progress = false;  // report progress on stderr (progress.hpp)
};

struct PackSummary {
  uint64_t files = 0, directories = 0, broadcast_files = 0;
  uint64_t raw_bytes = 0, stored_bytes = 0;
  double seconds = 0;
  uint64_t peak_memory = 0;  // most memory the files in work held at once, by the budget's count
  std::vector<std::string> warnings;
};

inline constexpr unsigned kMaxThreads = 1024;

// The options' own checks (Pack runs them first): InvalidArgument naming the
// option and its allowed range - a usage error, before anything is read.
Status ValidatePackOptions(const PackOptions& options);

Result<PackSummary> Pack(const PackOptions& options);

// Parses "zstd", "zstd:LEVEL" or "none" into a zstd level (0 for none).
Result<int> ParseCompression(const std::string& spec);

}  // namespace clairfs::pack
