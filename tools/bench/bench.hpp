// The reader loop of clairfs-bench: a list of files read in a seeded random
// order by T threads, the way a data loader's workers read samples.
//
// Threads share one position in the shuffled list (an atomic counter), so the
// global order of opens is the same whatever T is. Thread-safe to call
// RunBench from one thread at a time; it owns and joins its workers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace clairfs::bench {

enum class Mode {
  kRead,      // open, read the whole file in chunks, close
  kMetadata,  // stat, open, close
};

struct BenchOptions {
  std::string root;  // prefix joined with every listed path ("" = as listed)
  Mode mode = Mode::kRead;
  uint32_t threads = 1;
  uint64_t seed = 0;
  uint64_t limit = 0;              // 0 = every file
  size_t chunk = size_t{1} << 20;  // bytes per read() call
};

struct BenchResult {
  uint64_t files = 0;
  uint64_t bytes = 0;
  uint64_t errors = 0;
  double seconds = 0;
  std::string first_error;  // "path: strerror" of the first failure
};

// Regular files under `dir`, relative to it, sorted bytewise.
std::vector<std::string> WalkFiles(const std::string& dir);
// The list shuffled with std::mt19937_64(seed) (sorted first, so the order
// depends only on the set of names and the seed), cut to `limit` if non-zero.
std::vector<std::string> Order(std::vector<std::string> files, uint64_t seed, uint64_t limit);
BenchResult RunBench(const std::vector<std::string>& ordered, const BenchOptions& options);

}  // namespace clairfs::bench
