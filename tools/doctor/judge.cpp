#include "tools/doctor/judge.hpp"

#include <charconv>
#include <cstdio>

#include "fs/fuse/probe.hpp"

namespace clairfs::doctor {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n')) {
    s.remove_suffix(1);
  }
  return s;
}

// Calls `fn` on each line of `text` until it returns true.
template <typename Fn>
bool AnyLine(std::string_view text, Fn fn) {
  while (!text.empty()) {
    const size_t end = std::min(text.find('\n'), text.size());
    if (fn(text.substr(0, end))) return true;
    text.remove_prefix(std::min(end + 1, text.size()));
  }
  return false;
}

bool ParseDecimal(std::string_view s, uint64_t* out) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && end == s.data() + s.size() && !s.empty();
}

bool Contains(std::string_view text, std::string_view what) {
  return text.find(what) != std::string_view::npos;
}

}  // namespace

std::string HumanBytes(uint64_t bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = static_cast<double>(bytes);
  size_t u = 0;
  while (v >= 1024 && u + 1 < std::size(kUnits)) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", v, kUnits[u]);
  return buf;
}

Result<uint64_t> ParseMemAvailable(std::string_view meminfo) {
  std::optional<uint64_t> kib;
  AnyLine(meminfo, [&](std::string_view line) {
    if (line.rfind("MemAvailable:", 0) != 0) return false;
    std::string_view v = Trim(line.substr(13));
    if (v.size() > 3 && v.substr(v.size() - 3) == " kB") v = Trim(v.substr(0, v.size() - 3));
    uint64_t n = 0;
    if (ParseDecimal(v, &n)) kib = n;
    return true;
  });
  if (!kib) return Status::Corruption("meminfo: no line 'MemAvailable: N kB'");
  return *kib * 1024;
}

Result<uint64_t> ParseProcNumber(std::string_view text, const std::string& path) {
  uint64_t n = 0;
  if (!ParseDecimal(Trim(text), &n)) {
    return Status::Corruption(path + ": not a number: '" + std::string(Trim(text)) + "'");
  }
  return n;
}

bool FuseConfAllowsOther(std::string_view text) {
  return AnyLine(text, [](std::string_view line) {
    line = Trim(line.substr(0, std::min(line.find('#'), line.size())));
    return line == "user_allow_other";
  });
}

Check JudgeInotify(uint64_t max_user_watches, uint64_t max_queued_events, uint64_t dirs,
                   const std::string& proc) {
  const std::string where = proc + "/sys/fs/inotify/";
  const uint64_t want_watches = dirs + kWatchMargin;
  std::string found, fix;
  if (max_user_watches < want_watches) {
    found = "max_user_watches is " + std::to_string(max_user_watches) + " (" + where +
            "max_user_watches), the dataset has " + std::to_string(dirs) +
            " directories to watch (plus " + std::to_string(kWatchMargin) + " for other programs)";
    fix = "ask your site's administrators to raise it: sysctl -w fs.inotify.max_user_watches=" +
          std::to_string(std::max<uint64_t>(want_watches, 524288));
  }
  if (max_queued_events < kMinQueuedEvents) {
    found += std::string(found.empty() ? "" : "; ") + "max_queued_events is " +
             std::to_string(max_queued_events) + " (" + where +
             "max_queued_events), opens are lost in a burst below " +
             std::to_string(kMinQueuedEvents);
    fix += std::string(fix.empty() ? "ask your site's administrators to raise it: " : " and ") +
           "sysctl -w fs.inotify.max_queued_events=16384";
  }
  if (found.empty()) {
    return Check::Ok("inotify", std::to_string(dirs) + " directories to watch, max_user_watches " +
                                    std::to_string(max_user_watches) + ", max_queued_events " +
                                    std::to_string(max_queued_events));
  }
  return Check::Problem("inotify", found,
                        fix +
                            "; or set prefetch_opens: fuse in the config (every open then "
                            "costs a FUSE round trip)");
}

Check JudgeMemory(uint64_t available, uint64_t ram_cache, uint64_t manifest_bytes,
                  const std::string& config_name) {
  const uint64_t need = ram_cache + manifest_bytes;
  const std::string numbers = "MemAvailable " + HumanBytes(available) + ", the daemon needs " +
                              HumanBytes(need) + " (ram_cache " + HumanBytes(ram_cache) +
                              " + manifest " + HumanBytes(manifest_bytes) + ")";
  if (available >= need) return Check::Ok("memory", numbers);
  const uint64_t fits = available > manifest_bytes ? (available - manifest_bytes) / 2 : 0;
  return Check::Problem("memory", "not enough memory: " + numbers,
                        "set ram_cache: " + std::to_string(fits >> 20) + "M (half of what is " +
                            "left, the rest for the training job) in " + config_name +
                            ", or run on a node with more memory");
}

Check JudgeFuseProtocol(unsigned major, unsigned minor) {
  const std::string version = std::to_string(major) + "." + std::to_string(minor);
  const std::string need = "7." + std::to_string(fs::kFuseMinorRequired);
  if (major != 7 || minor < fs::kFuseMinorRequired) {
    return Check::Problem(
        "fuse_protocol",
        "the kernel speaks FUSE " + version + "; clairfsd needs " + need +
            " (FUSE_NO_OPEN_SUPPORT: declined opens)",
        "ask your site's administrators for a kernel with FUSE " + need + " or newer (Linux 4.2+)");
  }
  std::string note = "mounting works; the kernel speaks FUSE " + version;
  if (minor < fs::kFuseMinorFast) {
    note += " (7." + std::to_string(fs::kFuseMinorFast) +
            " would allow 1 MiB reads and cached listings: slower, still correct)";
  }
  return Check::Ok("fuse_protocol", note);
}

uint64_t JobNodes(uint64_t flag, const std::function<const char*(const char*)>& env,
                  std::string* source) {
  if (flag > 0) {
    *source = "--nodes";
    return flag;
  }
  for (const char* name : {"SLURM_NNODES", "SLURM_JOB_NUM_NODES"}) {
    uint64_t n = 0;
    const char* v = env(name);
    if (v != nullptr && ParseDecimal(v, &n) && n > 0) {
      *source = name;
      return n;
    }
  }
  *source = "default";
  return 1;
}

uint64_t NodeRank(std::optional<uint64_t> flag, const std::function<const char*(const char*)>& env,
                  std::string* source) {
  if (flag) {
    *source = "--rank";
    return *flag;
  }
  uint64_t r = 0;
  const char* v = env("SLURM_NODEID");
  if (v != nullptr && ParseDecimal(v, &r)) {
    *source = "SLURM_NODEID";
    return r;
  }
  *source = "default";
  return 0;
}

uint64_t ShareBytes(const std::vector<uint64_t>& pack_bytes,
                    const std::vector<uint32_t>& partitions,
                    const std::function<bool(uint32_t)>& staged) {
  uint64_t sum = 0;
  for (uint32_t p : partitions) {
    if (p < pack_bytes.size() && !staged(p)) sum += pack_bytes[p];
  }
  return sum;
}

MpiFamily FamilyOf(std::string_view text) {
  if (Contains(text, "Open MPI") || Contains(text, "OpenRTE") || Contains(text, "Open RTE")) {
    return MpiFamily::kOpenMpi;
  }
  for (std::string_view mark : {"HYDRA", "MPICH", "Intel(R) MPI", "MVAPICH", "CRAY MPICH"}) {
    if (Contains(text, mark)) return MpiFamily::kMpich;
  }
  return MpiFamily::kUnknown;
}

const char* FamilyName(MpiFamily family) {
  switch (family) {
    case MpiFamily::kMpich:
      return "MPICH";
    case MpiFamily::kOpenMpi:
      return "Open MPI";
    case MpiFamily::kUnknown:
      break;
  }
  return "an unknown MPI";
}

std::string VersionWords(std::string_view text) {
  std::string words;
  AnyLine(text, [&](std::string_view line) {
    const size_t at = line.find("Version:");
    if (at == std::string_view::npos) return false;
    const MpiFamily family = FamilyOf(text);
    words = std::string(family == MpiFamily::kUnknown ? "" : FamilyName(family)) + " " +
            std::string(Trim(line.substr(at + 8)));
    return true;
  });
  if (words.empty()) words = Trim(text.substr(0, std::min(text.find('\n'), text.size())));
  return std::string(Trim(words));
}

Check JudgeMpi(const MpiFacts& f) {
  const MpiFamily built = FamilyOf(f.built_with);
  const MpiFamily runs = FamilyOf(f.runs_with);
  const std::string libs = "built with " + f.built_with + ", runs with " +
                           (f.runs_with.empty() ? "?" : VersionWords(f.runs_with));
  if (runs != built) {
    return Check::Problem("mpi",
                          "the MPI library loaded at run time is not the one clairfs was built "
                          "with: " +
                              libs,
                          "load the MPI module clairfs was built with (module load of its " +
                              std::string(FamilyName(built)) + ") or fix LD_LIBRARY_PATH");
  }
  if (f.launcher.empty()) {
    if (!f.launcher_used) return Check::Ok("mpi", libs + "; no mpiexec (srun starts the daemons)");
    return Check::Problem("mpi",
                          libs +
                              "; no mpiexec on PATH (clairfs-run starts the daemons "
                              "with it outside Slurm)",
                          "module load the MPICH clairfs was built with, or apt-get install mpich");
  }
  const MpiFamily launcher = FamilyOf(f.launcher_version);
  const std::string which =
      f.launcher + " is " + FamilyName(launcher) + "'s (" + VersionWords(f.launcher_version) + ")";
  if (launcher == built) return Check::Ok("mpi", libs + "; " + which);
  if (!f.launcher_used) {
    return Check::Ok("mpi", libs + "; " + which + ", not used: srun starts the daemons");
  }
  return Check::Problem("mpi",
                        "mpiexec does not match the MPI clairfs was built with: " + libs + "; " +
                            which + ": its ranks would each start alone",
                        "put " + std::string(FamilyName(built)) +
                            "'s mpiexec first on PATH (module unload the other MPI, module "
                            "load the one clairfs was built with)");
}

}  // namespace clairfs::doctor
