// ReportLimits: what the daemon holds for the order reporters at most
// (docs/report.md, "Limits"). A value type.
#pragma once

#include <cstddef>
#include <cstdint>

namespace clairfs::fs {

struct ReportLimits {
  // Everything reported (tables, learned files, segments, segments in progress),
  // estimated from the sizes of its strings and vectors (not a config key yet).
  uint64_t memory_bytes = uint64_t{512} << 20;
  // Connections open at once; more are closed at accept.
  uint32_t max_connections = 256;
  // A frame's payload, in bytes; a longer frame closes its connection.
  uint32_t max_frame = 16u << 20;
  // Complete segments kept per reporting process; older ones are dropped.
  uint32_t kept_segments = 16;
};

}  // namespace clairfs::fs
