// The doctor's decisions, taken on data: parsing /proc files and fuse.conf,
// comparing limits with what the dataset and config need, naming an MPI.
// No I/O here (the checks read the files and hand their text in), so every
// rule is unit-tested on made-up inputs. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.hpp"
#include "tools/doctor/check.hpp"

namespace clairfs::doctor {

// "1.5 GiB", "300 MiB", "12 KiB", "17 B".
std::string HumanBytes(uint64_t bytes);

// MemAvailable of a /proc/meminfo text, in bytes; Corruption when the line
// is missing or malformed.
Result<uint64_t> ParseMemAvailable(std::string_view meminfo);
// A /proc/sys file holding one decimal number (and a newline).
Result<uint64_t> ParseProcNumber(std::string_view text, const std::string& path);
// Whether a fuse.conf text holds the option user_allow_other (a line of its
// own; '#' starts a comment).
bool FuseConfAllowsOther(std::string_view text);

// The inotify watcher waits 10 ms after each batch of events it reads; the
// page cache serves ~50,000 opens/s on a node (docs/design), i.e. 500 opens
// between two reads: a queue shorter than twice that loses opens
// (IN_Q_OVERFLOW) in a burst.
inline constexpr uint64_t kMinQueuedEvents = 1024;
// `dirs`: directories the watcher would watch (those holding files). Other
// programs of this user hold watches against the same limit: a margin of
// kWatchMargin is asked for on top.
inline constexpr uint64_t kWatchMargin = 1024;
Check JudgeInotify(uint64_t max_user_watches, uint64_t max_queued_events, uint64_t dirs,
                   const std::string& proc);

// `available` (MemAvailable) against the daemon's RAM: ram_cache plus the
// manifest it holds.
Check JudgeMemory(uint64_t available, uint64_t ram_cache, uint64_t manifest_bytes,
                  const std::string& config_name);

// The kernel's FUSE protocol version against kFuseMinorRequired/Fast.
Check JudgeFuseProtocol(unsigned major, unsigned minor);

// Nodes of the job: `flag` when given (> 0), else SLURM_NNODES, else
// SLURM_JOB_NUM_NODES, else 1; `env` is getenv or a fake. *source says which.
uint64_t JobNodes(uint64_t flag, const std::function<const char*(const char*)>& env,
                  std::string* source);
// This node's rank: `flag` when given, else SLURM_NODEID, else 0.
uint64_t NodeRank(std::optional<uint64_t> flag, const std::function<const char*(const char*)>& env,
                  std::string* source);

// Bytes this node stages: the sizes of `partitions` (indices into
// `pack_bytes`), without those `staged` says are already in the local dir.
uint64_t ShareBytes(const std::vector<uint64_t>& pack_bytes,
                    const std::vector<uint32_t>& partitions,
                    const std::function<bool(uint32_t)>& staged);

enum class MpiFamily { kUnknown, kMpich, kOpenMpi };
// What an MPI library's version text (MPI_Get_library_version, `mpiexec
// --version`) says it is. MPICH covers the MPICH ABI: MPICH's Hydra, Intel
// MPI, MVAPICH, Cray MPICH.
MpiFamily FamilyOf(std::string_view text);
const char* FamilyName(MpiFamily family);
// A version text in a few words: "MPICH 4.0.2" from the value of a line
// "...Version: V" (MPICH's library, Hydra), else its first line, trimmed.
std::string VersionWords(std::string_view text);

struct MpiFacts {
  std::string built_with;        // MpiBuiltWith()
  std::string runs_with;         // MpiRunsWith()
  std::string launcher;          // path of the mpiexec clairfs-run would use, "" if none
  std::string launcher_version;  // its --version output
  bool launcher_used = true;     // false under Slurm, where srun starts the daemons
};
Check JudgeMpi(const MpiFacts& facts);

}  // namespace clairfs::doctor
