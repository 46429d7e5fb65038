// The bytes the transport tests' servers return for a read: a function of the
// server rank and the request alone, so a client can check every byte.
#pragma once

#include <vector>

#include "fs/net/transport.hpp"

namespace clairfs::fs::testing {

inline std::vector<char> ExpectedBytes(int server, const PackRead& r) {
  std::vector<char> v(r.length);
  for (uint32_t i = 0; i < r.length; ++i) {
    v[i] = static_cast<char>((server * 131 + r.partition * 31 + r.offset + i) & 0xff);
  }
  return v;
}

}  // namespace clairfs::fs::testing
