// clairfs-order's command line: the sampler settings of the one table
// (sampler_settings.hpp) as --NAME VALUE options and --NAME switches, plus
// the tool's own: the dataset to list and what to print. Parsed by CLI11
// through base/cli into an OrderSpec and the output choices.
//
// ParseFlags collects every problem (an unknown argument, a missing or
// malformed value, a flag given twice, a setting the chosen sampler does not
// use, a rank outside the world size, a missing dataset) and reports them
// together in one InvalidArgument naming the flags. -h/--help sets `help`
// and checks nothing else. Pure; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/status.hpp"
#include "prefetch/options/read_order.hpp"

namespace clairfs::prefetch {

struct OrderFlags {
  prefetch::OrderSpec spec;
  std::string root;     // --root DIR (scan a real tree)
  std::string listing;  // --listing FILE (paths, trailing '/' = directory)
  uint64_t rank = 0;    // --rank (tf-list-files: or --shard-index)
  uint64_t epochs = 1;  // --epochs: print epochs 0 .. epochs-1
  bool epochs_given = false;
  std::optional<uint64_t> epoch;  // --epoch: print only this one
  bool print_indices = false;     // --indices: dataset indices instead of paths
  bool print_batches = false;     // --batches: keras-flow fit's candidates per epoch
  bool help = false;              // -h/--help: nothing else is checked
};

// `args` excludes argv[0].
Result<OrderFlags> ParseFlags(const std::vector<std::string>& args);

}  // namespace clairfs::prefetch
