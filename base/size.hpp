// Sizes as people write them on a command line or in a config file.
#pragma once

#include <cstdint>
#include <string_view>

namespace clairfs {

// "4G", "512M", "64KiB", "2TB", "1000" -> bytes (K/M/G/T are powers of 1024).
// False for anything else, a negative number, or a value past 2^64.
bool ParseSize(std::string_view text, uint64_t* out);

}  // namespace clairfs
