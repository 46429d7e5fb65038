#include "fs/config/config.hpp"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <functional>
#include <initializer_list>

#include "base/size.hpp"

namespace clairfs::fs {
namespace {

// One row of the table: a key, its help (the default is printed from a
// default-constructed Config), how to set it from text, how to show it.
struct Setting {
  const char* key;
  const char* help;
  std::function<bool(Config*, std::string_view)> set;  // false: bad value
  std::function<std::string(const Config&)> show;
  bool text = false;   // shown double-quoted: any string reads back as itself
  bool bytes = false;  // a size: the help shows its default with a K/M/G/T suffix
};

// A field of the Config, the same accessor for reading and writing.
template <typename T>
using Field = T& (*)(Config&);

template <typename T>
const T& Get(Field<T> field, const Config& c) {
  return field(const_cast<Config&>(c));
}

bool ParseBool(std::string_view t, bool* out) {
  if (t == "true" || t == "yes" || t == "on" || t == "1") {
    *out = true;
    return true;
  }
  if (t == "false" || t == "no" || t == "off" || t == "0") {
    *out = false;
    return true;
  }
  return false;
}

template <typename T>
bool ParseUnsigned(std::string_view t, T lo, T hi, T* out) {
  T v = 0;
  auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc() || end != t.data() + t.size() || v < lo || v > hi) return false;
  *out = v;
  return true;
}

bool ParseSeconds(std::string_view t, double* out) {
  std::string s(t);
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(v) || v < 0) return false;
  *out = v;
  return true;
}

// A YAML double-quoted scalar that reads back as exactly `s`. Not yaml-cpp's
// emitter: it writes bytes that are not UTF-8 as U+FFFD, so a path that is
// not UTF-8 (legal on Linux) would not read back as itself (config_test). A
// raw line break or tab inside quotes would be folded into a space on reading.
std::string Quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20 || u == 0x7f) {
      char esc[8];
      std::snprintf(esc, sizeof esc, "\\x%02x", u);
      out += esc;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// A sampler's name or a sampler setting's (prefetch_NAME): clairfs-order's
// names are letters, digits, '-' and '_', which YAML reads back unquoted.
bool PlainName(std::string_view name) {
  if (name.empty()) return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') return false;
  }
  return true;
}

Setting Text(const char* key, Field<std::string> f, bool required, const char* help) {
  return {key, help,
          [f, required](Config* c, std::string_view v) {
            f(*c) = v;
            return !required || !v.empty();
          },
          [f](const Config& c) { return Get(f, c); }, true};
}

Setting Choice(const char* key, Field<std::string> f, std::initializer_list<const char*> choices,
               const char* help) {
  std::vector<std::string> allowed(choices.begin(), choices.end());
  return {key, help,
          [f, allowed](Config* c, std::string_view v) {
            for (const std::string& a : allowed) {
              if (v == a) {
                f(*c) = v;
                return true;
              }
            }
            return false;
          },
          [f](const Config& c) { return Get(f, c); }};
}

Setting Flag(const char* key, Field<bool> f, const char* help) {
  return {key, help, [f](Config* c, std::string_view v) { return ParseBool(v, &f(*c)); },
          [f](const Config& c) { return std::string(Get(f, c) ? "true" : "false"); }};
}

Setting U32(const char* key, Field<uint32_t> f, uint32_t lo, uint32_t hi, const char* help) {
  return {key, help,
          [f, lo, hi](Config* c, std::string_view v) { return ParseUnsigned(v, lo, hi, &f(*c)); },
          [f](const Config& c) { return std::to_string(Get(f, c)); }};
}

Setting U64(const char* key, Field<uint64_t> f, uint64_t lo, const char* help) {
  return {key, help,
          [f, lo](Config* c, std::string_view v) {
            return ParseUnsigned<uint64_t>(v, lo, UINT64_MAX, &f(*c));
          },
          [f](const Config& c) { return std::to_string(Get(f, c)); }};
}

// Bytes, with an optional K/M/G/T suffix, at most `max`.
Setting Bytes(const char* key, Field<uint64_t> f, uint64_t max, const char* help) {
  return {key,
          help,
          [f, max](Config* c, std::string_view v) {
            uint64_t n = 0;
            if (!ParseSize(v, &n) || n > max) return false;
            f(*c) = n;
            return true;
          },
          [f](const Config& c) { return std::to_string(Get(f, c)); },
          false,
          true};
}

// 1073741824 -> "1G", 3000 -> "3000": what ParseSize reads back.
std::string SizeText(uint64_t n) {
  const char* suffix = "KMGT";
  int i = -1;
  while (i < 3 && n != 0 && n % 1024 == 0) {
    n /= 1024;
    ++i;
  }
  return std::to_string(n) + (i >= 0 ? std::string(1, suffix[i]) : "");
}

Setting Seconds(const char* key, Field<double> f, const char* help) {
  return {key, help, [f](Config* c, std::string_view v) { return ParseSeconds(v, &f(*c)); },
          [f](const Config& c) {
            char buf[64];
            std::snprintf(buf, sizeof buf, "%.9g", Get(f, c));
            return std::string(buf);
          }};
}

Setting Millis(const char* key, Field<std::chrono::milliseconds> f, uint32_t lo, uint32_t hi,
               const char* help) {
  return {key, help,
          [f, lo, hi](Config* c, std::string_view v) {
            uint32_t ms = 0;
            if (!ParseUnsigned(v, lo, hi, &ms)) return false;
            f(*c) = std::chrono::milliseconds(ms);
            return true;
          },
          [f](const Config& c) { return std::to_string(Get(f, c).count()); }};
}

constexpr uint32_t kHour = 3600000;

const std::vector<Setting>& Table() {
  static const std::vector<Setting> kTable = {
      Text(
          "dataset", [](Config & c) -> auto& { return c.cluster.dataset; }, true,
          "(required) clairfs-partition output directory"),
      Text(
          "mount", [](Config & c) -> auto& { return c.fuse.mount; }, true,
          "(required) mount point, an empty directory (created if missing)"),
      Text(
          "local_dir", [](Config & c) -> auto& { return c.cluster.local_dir; }, false,
          "node-local directory for staged packs, \"\" = read the dataset dir"),
      U32(
          "stage_threads", [](Config & c) -> auto& { return c.cluster.stage_threads; }, 1, 64,
          "packs copied to local_dir at once, 1-64"),
      Millis(
          "stage_yield_ms", [](Config & c) -> auto& { return c.cluster.stage_yield; }, 0, 60000,
          "ms staging pauses after a read of the job from the dataset dir, 0 = never"),
      Millis(
          "peer_timeout_ms", [](Config & c) -> auto& { return c.cluster.store.peer_timeout; }, 1,
          kHour, "ms to wait for a peer before a replica or the dataset dir"),
      U32(
          "server_threads", [](Config & c) -> auto& { return c.cluster.server_threads; }, 1, 256,
          "peers' reads this rank serves at once, 1-256"),
      Millis(
          "shutdown_wait_ms", [](Config & c) -> auto& { return c.cluster.shutdown_wait; }, 0, kHour,
          "ms a stopping rank waits for the others"),
      Millis(
          "start_timeout_ms", [](Config & c) -> auto& { return c.cluster.start_timeout; }, 1, kHour,
          "ms each start-up step waits for every rank"),
      Bytes(
          "ram_cache", [](Config & c) -> auto& { return c.ram_cache; }, UINT64_MAX,
          "bytes of file data kept in RAM, prefetched files included, suffix K/M/G/T"),
      U32(
          "frames_ahead", [](Config & c) -> auto& { return c.frames_ahead; }, 0, 256,
          "frames of a large file read ahead while it is read in order, 0 = off"),
      Bytes(
          "pack_readahead", [](Config & c) -> auto& { return c.cluster.store.pack_readahead; },
          UINT64_MAX, "pack bytes read ahead into the page cache on first use, 0 = off"),
      U32(
          "fuse_threads", [](Config & c) -> auto& { return c.fuse.fuse_threads; }, 1, 64,
          "threads reading /dev/fuse, answering at once what is in RAM, 1-64"),
      U32(
          "fuse_spin_us", [](Config & c) -> auto& { return c.fuse.spin_us; }, 0, 100000,
          "with fuse_threads 1: most us the reading thread looks for the next request before it "
          "sleeps (adapts to the gaps), 0-100000"),
      U32(
          "threads", [](Config & c) -> auto& { return c.fuse.threads; }, 1, 1024,
          "threads answering reads that wait for a pack or a peer, 1-1024"),
      Flag(
          "clone_fd", [](Config & c) -> auto& { return c.fuse.clone_fd; },
          "one /dev/fuse descriptor per reading thread"),
      Flag(
          "allow_other", [](Config & c) -> auto& { return c.fuse.allow_other; },
          "let other users use the mount"),
      Seconds(
          "entry_timeout", [](Config & c) -> auto& { return c.fuse.entry_timeout; },
          "seconds the kernel caches names"),
      Seconds(
          "attr_timeout", [](Config & c) -> auto& { return c.fuse.attr_timeout; },
          "seconds the kernel caches attributes"),
      Seconds(
          "negative_timeout", [](Config & c) -> auto& { return c.fuse.negative_timeout; },
          "seconds the kernel caches missing names"),
      Flag(
          "no_open", [](Config & c) -> auto& { return c.vfs.decline_open; },
          "kernel opens files itself, no OPEN round trip"),
      Flag(
          "no_opendir", [](Config & c) -> auto& { return c.vfs.decline_opendir; },
          "kernel opens directories itself (a killed daemon then leaves a dead mount)"),
      Bytes(
          "read_ahead", [](Config & c) -> auto& { return c.fuse.read_ahead; }, uint64_t{1} << 30,
          "kernel read-ahead of the mount in bytes, 0 = kernel default, at most 1G"),
      // Which samplers exist is checked with their settings (prefetch_setup).
      {"prefetch_sampler",
       "none or a clairfs-order sampler (torch-distributed, keras, tf-list-files, ...)",
       [](Config* c, std::string_view v) {
         c->prefetch_sampler = v;
         return PlainName(v);
       },
       [](const Config& c) { return c.prefetch_sampler; }},
      Text(
          "prefetch_root", [](Config & c) -> auto& { return c.prefetch_root; }, false,
          "dataset root inside the mount, relative"),
      U64(
          "prefetch_start_epoch", [](Config & c) -> auto& { return c.prefetch_start_epoch; }, 0,
          "first epoch of the job"),
      U64(
          "prefetch_epochs", [](Config & c) -> auto& { return c.prefetch_epochs; }, 1,
          "epochs the job runs, >= 1"),
      U64(
          "prefetch_world_size", [](Config & c) -> auto& { return c.prefetch_world_size; }, 1,
          "training ranks in the job, >= 1"),
      U64(
          "prefetch_ranks_per_node", [](Config & c) -> auto& { return c.prefetch_ranks_per_node; },
          0, "training ranks per node, 0 = world_size / daemons"),
      Choice(
          "prefetch_shared_stream", [](Config & c) -> auto& { return c.prefetch_shared_stream; },
          {"auto", "true", "false"},
          "the node's training processes all read rank 0's order: auto, true or false"),
      U64(
          "prefetch_batch_size", [](Config & c) -> auto& { return c.prefetch_batch_size; }, 1,
          "DataLoader batch_size, >= 1"),
      U64(
          "prefetch_workers", [](Config & c) -> auto& { return c.prefetch_workers; }, 0,
          "DataLoader num_workers"),
      U64(
          "prefetch_factor", [](Config & c) -> auto& { return c.prefetch_factor; }, 1,
          "DataLoader prefetch_factor, >= 1"),
      U32(
          "prefetch_threads", [](Config & c) -> auto& { return c.prefetch_engine.threads; }, 1, 64,
          "prefetch fetch threads, 1-64"),
      Millis(
          "prefetch_wait_ms", [](Config & c) -> auto& { return c.prefetch_engine.open_wait; }, 0,
          60000, "ms an open waits for its in-flight prefetch, 0-60000"),
      Choice(
          "prefetch_opens", [](Config & c) -> auto& { return c.prefetch_opens; },
          {"inotify", "fuse"},
          "how opens reach the prefetcher: inotify (no round trip) or fuse (OPEN requests)"),
      Flag(
          "report", [](Config & c) -> auto& { return c.report; },
          "take the orders the job's processes report (docs/report.md)"),
      Text(
          "writes_dir", [](Config & c) -> auto& { return c.writes.name; }, false,
          "writable directory in the mount's root for outputs, \"\" = read-only mount"),
      Text(
          "writes_local", [](Config & c) -> auto& { return c.writes.local; }, false,
          "node-local directory where writes land first"),
      Text(
          "writes_persist", [](Config & c) -> auto& { return c.writes.persist; }, false,
          "shared directory writes are drained to (and an earlier run's are read from)"),
      Millis(
          "writes_settle_ms", [](Config & c) -> auto& { return c.writes.settle; }, 0, kHour,
          "ms without a write before a file is drained (fsync drains at once)"),
      Millis(
          "writes_stall_ms", [](Config & c) -> auto& { return c.writes_stall; }, 1, kHour,
          "ms a stopping daemon waits for a drain that makes no progress"),
      {"log_level", "error, warn, info or debug",
       [](Config* c, std::string_view v) { return ParseLogLevel(v, &c->log_level); },
       [](const Config& c) { return std::string(LogLevelName(c.log_level)); }},
  };
  return kTable;
}

}  // namespace

std::vector<std::string> ConfigKeys() {
  std::vector<std::string> keys;
  for (const Setting& s : Table()) keys.emplace_back(s.key);
  return keys;
}

Status SetConfigValue(Config* config, std::string_view key, std::string_view value) {
  for (const Setting& s : Table()) {
    if (key != s.key) continue;
    if (!s.set(config, value)) {
      return Status::InvalidArgument(std::string(key) + ": bad value '" + std::string(value) +
                                     "' (expected " + s.help + ")");
    }
    return Status::Ok();
  }
  // A key that no longer exists says what replaced it.
  if (key == "prefetch_budget") {
    return Status::InvalidArgument(
        "prefetch_budget: no longer a setting: ram_cache is the daemon's one budget for file "
        "bytes in RAM, the prefetched files included (set ram_cache instead)");
  }
  // Any other prefetch_ key is one of the sampler's own settings, checked
  // with prefetch_sampler by the order parser (fs/clairfsd/prefetch_setup).
  if (key.size() > 9 && key.substr(0, 9) == "prefetch_" && PlainName(key.substr(9))) {
    const std::string name(key.substr(9));
    for (auto& [k, v] : config->prefetch_settings) {
      if (k == name) {
        v = value;
        return Status::Ok();
      }
    }
    config->prefetch_settings.emplace_back(name, value);
    return Status::Ok();
  }
  return Status::InvalidArgument(std::string(key) + ": unknown key");
}

std::vector<std::string> ValidateConfig(const Config& config) {
  std::vector<std::string> errors;
  if (config.cluster.dataset.empty()) errors.push_back("dataset: required (--dataset DIR)");
  if (config.fuse.mount.empty()) errors.push_back("mount: required (--mount DIR)");
  const WriteAreaOptions& w = config.writes;
  if (!w.name.empty() || !w.local.empty() || !w.persist.empty()) {
    for (auto [key, value] : {std::pair{"writes_dir", &w.name},
                              {"writes_local", &w.local},
                              {"writes_persist", &w.persist}}) {
      if (value->empty()) {
        errors.push_back(std::string(key) +
                         ": required with the other writes_ keys (writes_dir, writes_local, "
                         "writes_persist)");
      }
    }
    if (!w.name.empty() && (w.name == "." || w.name == ".." || w.name == ControlFiles::kDirName ||
                            w.name.find('/') != std::string::npos)) {
      errors.push_back("writes_dir: '" + w.name + "' must be one name, a directory of the mount");
    }
    if (!w.local.empty() && w.local == w.persist) {
      errors.push_back("writes_local and writes_persist: must be two directories");
    }
  }
  if (config.prefetch_sampler != "none") {
    const std::string& root = config.prefetch_root;
    if (!root.empty() && (root.front() == '/' || root.back() == '/' ||
                          ("/" + root + "/").find("/../") != std::string::npos ||
                          ("/" + root + "/").find("/./") != std::string::npos ||
                          root.find("//") != std::string::npos)) {
      errors.push_back("prefetch_root: '" + root +
                       "' must be a clean relative path inside the mount");
    }
    if (config.prefetch_ranks_per_node > config.prefetch_world_size) {
      errors.push_back(
          "prefetch_ranks_per_node: " + std::to_string(config.prefetch_ranks_per_node) +
          " is more than prefetch_world_size " + std::to_string(config.prefetch_world_size));
    }
    if (config.prefetch_sampler == "torch-random" && config.prefetch_world_size != 1) {
      errors.push_back("prefetch_world_size: torch-random is a single-rank sampler (world 1)");
    }
  }
  return errors;
}

std::string DescribeConfig(const Config& config) {
  std::string out;
  for (const Setting& s : Table()) {
    out += std::string(s.key) + ": " + (s.text ? Quote(s.show(config)) : s.show(config)) + "\n";
  }
  for (const auto& [name, value] : config.prefetch_settings) {
    out += "prefetch_" + name + ": " + Quote(value) + "\n";
  }
  return out;
}

std::string ConfigHelp() {
  const Config defaults;
  std::string out;
  for (const Setting& s : Table()) {
    std::string flag = std::string("  --") + s.key;
    for (char& c : flag) {
      if (c == '_') c = '-';
    }
    flag.resize(std::max<size_t>(flag.size() + 1, 22), ' ');
    std::string shown = s.show(defaults);
    if (s.text) shown = "\"" + shown + "\"";
    if (s.bytes) shown = SizeText(std::stoull(shown));
    const bool required = std::string_view(s.help).starts_with("(required)");
    out += flag + s.help + (required ? "" : " [" + shown + "]") + "\n";
  }
  return out;
}

}  // namespace clairfs::fs
