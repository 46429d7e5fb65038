// The sampler settings as options - clairfs-order's command line, and the
// daemon's prefetch_<option> keys turned into the same options
// (fs/clairfsd/prefetch_setup.cpp) - parsed into an OrderSpec plus the tool's
// output choices. One parser, so both accept exactly the same samplers and
// values. The tf.data and Keras options live in order_flags_tf / _keras.
//
// ParseFlags collects every problem (unknown flag, missing or malformed value,
// a flag the chosen sampler does not use, a rank outside the world size) and
// reports them together in one InvalidArgument. Pure; thread-safe.
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
  uint64_t rank = 0;    // --rank
  uint64_t epochs = 1;  // --epochs: print epochs 0 .. epochs-1
  bool epochs_given = false;
  std::optional<uint64_t> epoch;  // --epoch: print only this one
  bool print_indices = false;     // --indices: dataset indices instead of paths
  bool print_batches = false;     // --batches: keras-flow fit's candidates per epoch
  bool help = false;
};

// Who parses: clairfs-order (a dataset to list, --root or --listing, and the
// output flags) or the daemon (its mount is the dataset; only the sampler's
// own settings are accepted, and no listing flag is required).
enum class FlagsFor { kOrderTool, kDaemon };

Result<OrderFlags> ParseFlags(const std::vector<std::string>& args,
                              FlagsFor who = FlagsFor::kOrderTool);

// Whether `flag` ("--seed") is one of the sampler settings, a switch or one
// that takes a value (the daemon maps its prefetch_ keys onto these).
bool IsSamplerSwitch(const std::string& flag);
bool IsSamplerValued(const std::string& flag);


}  // namespace clairfs::prefetch
