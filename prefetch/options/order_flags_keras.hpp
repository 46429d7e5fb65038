// The Keras-specific options of clairfs-order: --class-names and
// --follow-links for --sampler keras, and every option of --sampler
// keras-flow (ImageDataGenerator.flow_from_directory). Called by ParseFlags
// with the flags already split into values and switches; problems are
// appended to `errors`. Pure; thread-safe.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "prefetch/options/read_order.hpp"

namespace clairfs::prefetch {

// Valued flags and switches this file adds to clairfs-order.
extern const std::vector<std::string> kKerasValuedFlags;
extern const std::vector<std::string> kKerasSwitches;

// Whether `flag` (one of the above, or a shared one such as --seed) applies
// to `kind`; false for flags this file does not know.
bool KerasFlagApplies(const std::string& flag, prefetch::SamplerKind kind);

void ParseKerasFlags(const std::map<std::string, std::string>& values,
                     const std::set<std::string>& switches, prefetch::OrderSpec& spec,
                     std::vector<std::string>& errors);

}  // namespace clairfs::prefetch
