#include "fs/config/config.hpp"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <functional>

#include "base/size.hpp"

namespace clairfs::fs {
namespace {

struct Setting {
  const char* key;
  const char* help;
  std::function<bool(Config*, std::string_view)> set;  // false: bad value
  std::function<std::string(const Config&)> show;
};

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

bool ParseU32(std::string_view t, uint32_t lo, uint32_t hi, uint32_t* out) {
  uint32_t v = 0;
  auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc() || end != t.data() + t.size() || v < lo || v > hi) return false;
  *out = v;
  return true;
}

bool ParseU64(std::string_view t, uint64_t lo, uint64_t* out) {
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc() || end != t.data() + t.size() || v < lo) return false;
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

std::string ShowDouble(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

// A YAML double-quoted scalar that reads back as exactly `s`: a raw line
// break or tab inside quotes would be folded into a space on reading.
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

const std::vector<Setting>& Table() {
  static const std::vector<Setting> kTable = {
      {"dataset", "(required) clairfs-partition output directory",
       [](Config* c, std::string_view v) {
         c->dataset = v;
         return !v.empty();
       },
       [](const Config& c) { return Quote(c.dataset); }},
      {"mount", "(required) mount point, an empty directory (created if missing)",
       [](Config* c, std::string_view v) {
         c->mount = v;
         return !v.empty();
       },
       [](const Config& c) { return Quote(c.mount); }},
      {"local_dir", "node-local directory for staged packs, \"\" = read the dataset dir [\"\"]",
       [](Config* c, std::string_view v) {
         c->local_dir = v;
         return true;
       },
       [](const Config& c) { return Quote(c.local_dir); }},
      {"stage_threads", "packs copied to local_dir at once, 1-64 [2]",
       [](Config* c, std::string_view v) { return ParseU32(v, 1, 64, &c->stage_threads); },
       [](const Config& c) { return std::to_string(c.stage_threads); }},
      {"peer_timeout_ms", "ms to wait for a peer before a replica or the dataset dir [2000]",
       [](Config* c, std::string_view v) { return ParseU32(v, 1, 3600000, &c->peer_timeout_ms); },
       [](const Config& c) { return std::to_string(c.peer_timeout_ms); }},
      {"server_threads", "peers' reads this rank serves at once, 1-256 [4]",
       [](Config* c, std::string_view v) { return ParseU32(v, 1, 256, &c->server_threads); },
       [](const Config& c) { return std::to_string(c.server_threads); }},
      {"shutdown_wait_ms", "ms a stopping rank waits for the others [10000]",
       [](Config* c, std::string_view v) { return ParseU32(v, 0, 3600000, &c->shutdown_wait_ms); },
       [](const Config& c) { return std::to_string(c.shutdown_wait_ms); }},
      {"start_timeout_ms", "ms each start-up step waits for every rank [120000]",
       [](Config* c, std::string_view v) {
         return ParseU32(v, 1, 3600000, &c->start_timeout_ms);
       },
       [](const Config& c) { return std::to_string(c.start_timeout_ms); }},
      {"ram_cache", "bytes of file data kept in RAM, prefetched files included, suffix K/M/G/T [1G]",
       [](Config* c, std::string_view v) { return ParseSize(v, &c->ram_cache); },
       [](const Config& c) { return std::to_string(c.ram_cache); }},
      {"pack_readahead", "pack bytes read ahead into the page cache on first use, 0 = off [0]",
       [](Config* c, std::string_view v) { return ParseSize(v, &c->pack_readahead); },
       [](const Config& c) { return std::to_string(c.pack_readahead); }},
      {"fuse_threads", "threads reading /dev/fuse, answering at once what is in RAM, 1-64 [1]",
       [](Config* c, std::string_view v) { return ParseU32(v, 1, 64, &c->fuse_threads); },
       [](const Config& c) { return std::to_string(c.fuse_threads); }},
      {"fuse_spin_us", "with fuse_threads 1: most us the reading thread looks for the next request before it sleeps (adapts to the gaps), 0-100000 [200]",
       [](Config* c, std::string_view v) { return ParseU32(v, 0, 100000, &c->fuse_spin_us); },
       [](const Config& c) { return std::to_string(c.fuse_spin_us); }},
      {"threads", "threads answering reads that wait for a pack or a peer, 1-1024 [10]",
       [](Config* c, std::string_view v) { return ParseU32(v, 1, 1024, &c->threads); },
       [](const Config& c) { return std::to_string(c.threads); }},
      {"clone_fd", "one /dev/fuse descriptor per reading thread [true]",
       [](Config* c, std::string_view v) { return ParseBool(v, &c->clone_fd); },
       [](const Config& c) { return std::string(c.clone_fd ? "true" : "false"); }},
      {"allow_other", "let other users use the mount [false]",
       [](Config* c, std::string_view v) { return ParseBool(v, &c->allow_other); },
       [](const Config& c) { return std::string(c.allow_other ? "true" : "false"); }},
      {"entry_timeout", "seconds the kernel caches names [31536000]",
       [](Config* c, std::string_view v) { return ParseSeconds(v, &c->entry_timeout); },
       [](const Config& c) { return ShowDouble(c.entry_timeout); }},
      {"attr_timeout", "seconds the kernel caches attributes [31536000]",
       [](Config* c, std::string_view v) { return ParseSeconds(v, &c->attr_timeout); },
       [](const Config& c) { return ShowDouble(c.attr_timeout); }},
      {"negative_timeout", "seconds the kernel caches missing names [31536000]",
       [](Config* c, std::string_view v) { return ParseSeconds(v, &c->negative_timeout); },
       [](const Config& c) { return ShowDouble(c.negative_timeout); }},
      {"no_open", "kernel opens files itself, no OPEN round trip [true]",
       [](Config* c, std::string_view v) { return ParseBool(v, &c->no_open); },
       [](const Config& c) { return std::string(c.no_open ? "true" : "false"); }},
      {"no_opendir", "kernel opens directories itself (a killed daemon then leaves a dead mount) [false]",
       [](Config* c, std::string_view v) { return ParseBool(v, &c->no_opendir); },
       [](const Config& c) { return std::string(c.no_opendir ? "true" : "false"); }},
      {"read_ahead", "kernel read-ahead of the mount in bytes, 0 = kernel default, at most 1G [1M]",
       [](Config* c, std::string_view v) {
         return ParseSize(v, &c->read_ahead) && c->read_ahead <= (uint64_t{1} << 30);
       },
       [](const Config& c) { return std::to_string(c.read_ahead); }},
      {"prefetch_sampler",
       "none or a clairfs-order sampler (torch-distributed, keras, tf-list-files, ...) [none]",
       [](Config* c, std::string_view v) {
         c->prefetch_sampler = v;  // which samplers exist is checked with their settings
         return PlainName(v);
       },
       [](const Config& c) { return c.prefetch_sampler; }},
      {"prefetch_root", "dataset root inside the mount, relative [\"\"]",
       [](Config* c, std::string_view v) {
         c->prefetch_root = v;
         return true;
       },
       [](const Config& c) { return Quote(c.prefetch_root); }},
      {"prefetch_start_epoch", "first epoch of the job [0]",
       [](Config* c, std::string_view v) { return ParseU64(v, 0, &c->prefetch_start_epoch); },
       [](const Config& c) { return std::to_string(c.prefetch_start_epoch); }},
      {"prefetch_epochs", "epochs the job runs, >= 1 [1]",
       [](Config* c, std::string_view v) { return ParseU64(v, 1, &c->prefetch_epochs); },
       [](const Config& c) { return std::to_string(c.prefetch_epochs); }},
      {"prefetch_world_size", "training ranks in the job, >= 1 [1]",
       [](Config* c, std::string_view v) { return ParseU64(v, 1, &c->prefetch_world_size); },
       [](const Config& c) { return std::to_string(c.prefetch_world_size); }},
      {"prefetch_ranks_per_node", "training ranks per node, 0 = world_size / daemons [0]",
       [](Config* c, std::string_view v) { return ParseU64(v, 0, &c->prefetch_ranks_per_node); },
       [](const Config& c) { return std::to_string(c.prefetch_ranks_per_node); }},
      {"prefetch_shared_stream",
       "the node's training processes all read rank 0's order: auto, true or false [auto]",
       [](Config* c, std::string_view v) {
         c->prefetch_shared_stream = v;
         return v == "auto" || v == "true" || v == "false";
       },
       [](const Config& c) { return c.prefetch_shared_stream; }},
      {"prefetch_batch_size", "DataLoader batch_size, >= 1 [1]",
       [](Config* c, std::string_view v) { return ParseU64(v, 1, &c->prefetch_batch_size); },
       [](const Config& c) { return std::to_string(c.prefetch_batch_size); }},
      {"prefetch_workers", "DataLoader num_workers [0]",
       [](Config* c, std::string_view v) { return ParseU64(v, 0, &c->prefetch_workers); },
       [](const Config& c) { return std::to_string(c.prefetch_workers); }},
      {"prefetch_factor", "DataLoader prefetch_factor, >= 1 [2]",
       [](Config* c, std::string_view v) { return ParseU64(v, 1, &c->prefetch_factor); },
       [](const Config& c) { return std::to_string(c.prefetch_factor); }},
      {"prefetch_threads", "prefetch fetch threads, 1-64 [2]",
       [](Config* c, std::string_view v) { return ParseU32(v, 1, 64, &c->prefetch_threads); },
       [](const Config& c) { return std::to_string(c.prefetch_threads); }},
      {"prefetch_wait_ms", "ms an open waits for its in-flight prefetch, 0-60000 [2000]",
       [](Config* c, std::string_view v) { return ParseU32(v, 0, 60000, &c->prefetch_wait_ms); },
       [](const Config& c) { return std::to_string(c.prefetch_wait_ms); }},
      {"prefetch_opens",
       "how opens reach the prefetcher: inotify (no round trip) or fuse (OPEN requests) [inotify]",
       [](Config* c, std::string_view v) {
         c->prefetch_opens = v;
         return v == "inotify" || v == "fuse";
       },
       [](const Config& c) { return c.prefetch_opens; }},
      {"log_level", "error, warn, info or debug [info]",
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
  if (config.dataset.empty()) errors.push_back("dataset: required (--dataset DIR)");
  if (config.mount.empty()) errors.push_back("mount: required (--mount DIR)");
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
  for (const Setting& s : Table()) out += std::string(s.key) + ": " + s.show(config) + "\n";
  for (const auto& [name, value] : config.prefetch_settings) {
    out += "prefetch_" + name + ": " + Quote(value) + "\n";
  }
  return out;
}

std::string ConfigHelp() {
  std::string out;
  for (const Setting& s : Table()) {
    std::string flag = std::string("  --") + s.key;
    for (char& c : flag) {
      if (c == '_') c = '-';
    }
    flag.resize(std::max<size_t>(flag.size() + 1, 22), ' ');
    out += flag + s.help + "\n";
  }
  return out;
}

}  // namespace clairfs::fs
