// Expanding per-rank paths: `{rank}`, `{host}`, `$VAR`, `${VAR}` and
// `${VAR:-default}`, so one command line serves N ranks, even N ranks on one
// host (`$TMPDIR/x/mnt{rank}`), and a Slurm job (`${SLURM_TMPDIR:-/tmp}`).
// Pure function; thread-safe.
#pragma once

#include <string>

#include "base/status.hpp"

namespace clairfs::fs {

// An unset variable without a default is an error naming it.
Result<std::string> ExpandPath(const std::string& pattern, int rank, const std::string& host);

}  // namespace clairfs::fs
