// The tf.data flags of clairfs-order (--sampler tf-list-files, and the
// tf.data settings of --sampler keras for Keras >= 3.3), kept apart from
// flags.cpp so that file only lists them and calls ApplyTfFlags.
// Pure; thread-safe.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "prefetch/options/order_flags.hpp"

namespace clairfs::prefetch {

// Flags that take a value / switches, to be accepted by the parser.
const std::set<std::string>& TfValuedFlags();
const std::set<std::string>& TfSwitchFlags();

// Applies them to `f` (whose spec.kind is already set); appends every problem
// to `errors`, including tf flags given to a sampler that does not use them.
void ApplyTfFlags(std::map<std::string, std::string>& values, const std::set<std::string>& switches,
                  OrderFlags& f, std::vector<std::string>& errors);

}  // namespace clairfs::prefetch
