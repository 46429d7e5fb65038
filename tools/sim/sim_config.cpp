#include "tools/sim/sim_config.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>

#include "base/size.hpp"
#include "partitioner/pack/placement.hpp"
#include "prefetch/keras/keras_flow.hpp"

namespace clairfs::sim {
namespace {

// Reads one section's keys into the config, collecting problems.
class Reader {
 public:
  explicit Reader(std::vector<std::string>* problems) : problems_(problems) {}

  using Setter = std::function<bool(const YAML::Node&)>;
  void Section(const YAML::Node& root, const std::string& name,
               const std::map<std::string, Setter>& keys) {
    const YAML::Node s = root[name];
    if (!s) return;
    if (!s.IsMap()) return Problem(name + ": a map of keys is expected");
    for (const auto& kv : s) {
      const std::string key = kv.first.as<std::string>();
      auto it = keys.find(key);
      if (it == keys.end()) {
        Problem(name + "." + key + ": unknown key");
      } else if (!kv.second.IsScalar() || !it->second(kv.second)) {
        Problem(name + "." + key + ": bad value '" + Text(kv.second) + "'");
      }
    }
  }
  void Problem(std::string p) { problems_->push_back(std::move(p)); }

 private:
  static std::string Text(const YAML::Node& n) {
    if (n.IsScalar()) return n.Scalar();
    std::ostringstream out;
    out << n;
    return out.str();
  }
  std::vector<std::string>* problems_;
};

template <typename T>
Reader::Setter Count(T* out, T min) {
  return [out, min](const YAML::Node& n) {
    const std::string& s = n.Scalar();
    if (s.empty() || !std::all_of(s.begin(), s.end(), ::isdigit)) return false;
    const uint64_t v = std::stoull(s);
    if (v < static_cast<uint64_t>(min) || v > static_cast<uint64_t>(std::numeric_limits<T>::max()))
      return false;
    *out = static_cast<T>(v);
    return true;
  };
}
Reader::Setter Size(uint64_t* out) {
  return [out](const YAML::Node& n) { return ParseSize(n.Scalar(), out); };
}
Reader::Setter Rate(double* out) {  // a size per second
  return [out](const YAML::Node& n) {
    uint64_t v = 0;
    if (!ParseSize(n.Scalar(), &v)) return false;
    *out = static_cast<double>(v);
    return true;
  };
}
Reader::Setter Seconds(double* out, double unit) {  // a non-negative number of `unit`s
  return [out, unit](const YAML::Node& n) {
    try {
      const double v = n.as<double>();
      if (!(v >= 0)) return false;
      *out = v * unit;
      return true;
    } catch (const YAML::Exception&) {
      return false;
    }
  };
}
Reader::Setter Flag(bool* out) {
  return [out](const YAML::Node& n) {
    try {
      *out = n.as<bool>();
      return true;
    } catch (const YAML::Exception&) {
      return false;
    }
  };
}

Reader::Setter OrderKindOf(OrderKind* out) {
  return [out](const YAML::Node& n) {
    static const std::map<std::string, OrderKind> kinds{{"torch", OrderKind::kTorch},
                                                        {"keras", OrderKind::kKeras},
                                                        {"keras-flow", OrderKind::kKerasFlow}};
    auto it = kinds.find(n.Scalar());
    if (it == kinds.end()) return false;
    *out = it->second;
    return true;
  };
}

// What the sampler's keys need of each other and of its kind.
void CheckSampler(const YAML::Node& root, const SimConfig& c, Reader& r) {
  const YAML::Node s = root["sampler"];
  if (!s || !s.IsMap()) return;
  if (c.order != OrderKind::kTorch && c.sampler_seed > 0xffffffffull) {
    r.Problem("sampler.seed: Keras's generators take a seed below 2^32");
  }
  if (s["keras_version"] && c.order == OrderKind::kTorch) {
    r.Problem("sampler.keras_version: for kind keras or keras-flow only");
  }
  for (const char* key : {"steps_per_epoch", "augment", "fit_shuffle"}) {
    if (s[key] && c.order != OrderKind::kKerasFlow) {
      r.Problem(std::string("sampler.") + key + ": for kind keras-flow only");
    }
  }
}

}  // namespace

const std::vector<std::string>& KnownPolicies() {
  static const std::vector<std::string> known{"shared-fs", "fanstore", "nopfs", "clairfs"};
  return known;
}

Result<SimConfig> ParseSimConfig(const std::string& yaml) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml);
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(std::string("not YAML: ") + e.what());
  }
  SimConfig c;
  if (!root || root.IsNull()) return AtNodes(c, c.job.nodes);
  if (!root.IsMap()) return Status::InvalidArgument("a map of sections is expected");
  std::vector<std::string> problems;
  Reader r(&problems);
  JobSpec& j = c.job;
  r.Section(root, "job",
            {{"nodes", Count(&j.nodes, 1u)},
             {"ranks_per_node", Count(&j.ranks_per_node, 1u)},
             {"batch_size", Count(&j.batch_size, 1u)},
             {"compute_seconds", Seconds(&j.compute_seconds, 1)},
             {"epochs", Count(&j.epochs, 1u)},
             {"workers", Count(&j.workers, 1u)},
             {"prefetch_factor", Count(&j.prefetch_factor, 1u)},
             {"drop_last", Flag(&j.drop_last)},
             {"file_seconds", Seconds(&j.file_seconds, 1)},
             {"start_seconds", Seconds(&j.start_seconds, 1)},
             {"reads_per_file", Count(&j.reads_per_file, 1u)},
             {"first_step_seconds", Seconds(&j.first_step_seconds, 1)},
             {"compute_on_cpu", Flag(&j.compute_on_cpu)}});
  r.Section(root, "dataset",
            {{"files", Count<uint64_t>(&c.files, 1)},
             {"file_size", Size(&c.file_size)},
             {"file_size_stdev", Size(&c.file_size_stdev)},
             {"seed", Count<uint64_t>(&c.dataset_seed, 0)},
             {"classes", Count(&c.classes, 1u)}});
  r.Section(root, "sampler",
            {{"seed", Count<uint64_t>(&c.sampler_seed, 0)},
             {"shuffle", Flag(&c.shuffle)},
             {"kind", OrderKindOf(&c.order)},
             {"keras_version",
              [&c](const YAML::Node& n) {
                if (!prefetch::KerasVersion::Parse(n.Scalar()).ok()) return false;
                c.keras_version = n.Scalar();
                return true;
              }},
             {"steps_per_epoch", Count<uint64_t>(&c.steps_per_epoch, 1)},
             {"augment",
              [&c](const YAML::Node& n) {
                if (!prefetch::KerasFlowAugment::Parse(n.Scalar()).ok()) return false;
                c.augment = n.Scalar();
                return true;
              }},
             {"fit_shuffle", Flag(&c.fit_shuffle)}});
  CheckSampler(root, c, r);
  r.Section(root, "shared_fs",
            {{"bandwidth", Rate(&c.shared_fs.bandwidth)},
             {"iops", Seconds(&c.shared_fs.iops, 1)},
             {"open_latency_ms", Seconds(&c.shared_fs.latency, 1e-3)},
             {"latency_per_request_ms", Seconds(&c.shared_fs.latency_per_request, 1e-3)},
             {"node_bandwidth", Rate(&c.shared_fs.client_bandwidth)}});
  r.Section(root, "node",
            {{"ssd_bandwidth", Rate(&c.node.ssd.bandwidth)},
             {"ssd_iops", Seconds(&c.node.ssd.iops, 1)},
             {"link_bandwidth", Rate(&c.node.link.bandwidth)},
             {"link_latency_us", Seconds(&c.node.link.latency, 1e-6)},
             {"ram", Size(&c.ram)},
             {"ssd_capacity", Size(&c.ssd_capacity)},
             {"cores", Seconds(&c.cores, 1)},
             {"page_cache", [&c](const YAML::Node& n) {
                uint64_t v = 0;
                if (!ParseSize(n.Scalar(), &v)) return false;
                c.page_cache = v;
                return true;
              }}});
  r.Section(root, "fanstore", {{"partitions", Count(&c.partitions, 0u)}});
  r.Section(root, "nopfs",
            {{"prefetcher", Flag(&c.nopfs_prefetcher)},
             {"staging_buffer",
              [&c](const YAML::Node& n) {
                return ParseSize(n.Scalar(), &c.nopfs_staging) && c.nopfs_staging > 0;
              }},
             {"prefetch_threads", Count(&c.nopfs_threads, 1u)},
             {"sample_bytes", Size(&c.nopfs_sample_bytes)}});
  r.Section(root, "clairfs",
            {{"fetch_slots", Count(&c.fetch_slots, 1u)},
             {"stage_threads", Count(&c.stage_threads, 1u)},
             {"replicas", Count(&c.replicas, 1u)},
             {"stage_chunk", Size(&c.stage_chunk)},
             {"stage_yield_ms", Seconds(&c.stage_yield, 1e-3)},
             {"stage_whole_chunks", Flag(&c.stage_whole_chunks)},
             {"stage_order",
              [&c](const YAML::Node& n) {
                if (n.Scalar() != "first-use" && n.Scalar() != "pack") return false;
                c.stage_first_use = n.Scalar() == "first-use";
                return true;
              }},
             {"cpu_stage_ns_per_byte", Seconds(&c.cpu_per_staged_byte, 1e-9)},
             {"cpu_serve_ns_per_byte", Seconds(&c.cpu_per_served_byte, 1e-9)},
             {"cpu_peer_ns_per_byte", Seconds(&c.cpu_per_peer_byte, 1e-9)},
             {"cpu_open_us", Seconds(&c.cpu_per_open, 1e-6)},
             {"placement",
              [&c](const YAML::Node& n) {
                if (!pack::MakePlacement(n.Scalar()).ok()) return false;
                c.placement = n.Scalar();
                return true;
              }},
             {"homes", [&c](const YAML::Node& n) {
                if (n.Scalar() != "reader" && n.Scalar() != "modulo") return false;
                c.homes_by_reader = n.Scalar() == "reader";
                return true;
              }}});
  if (c.job.compute_on_cpu && c.cores == 0) {
    r.Problem("job.compute_on_cpu: needs node.cores (the CPU is not modelled without it)");
  }
  for (const auto& kv : root) {
    const std::string key = kv.first.as<std::string>();
    if (key == "policies") {
      if (!kv.second.IsSequence() || kv.second.size() == 0) {
        r.Problem("policies: a list of policies is expected");
        continue;
      }
      c.policies.clear();
      for (const auto& p : kv.second) {
        const std::string name = p.IsScalar() ? p.Scalar() : "?";
        const auto& known = KnownPolicies();
        if (std::find(known.begin(), known.end(), name) == known.end()) {
          r.Problem("policies: unknown policy '" + name +
                    "' (known: shared-fs, fanstore, nopfs, clairfs)");
        } else {
          c.policies.push_back(name);
        }
      }
    } else if (key != "job" && key != "dataset" && key != "sampler" && key != "shared_fs" &&
               key != "node" && key != "fanstore" && key != "nopfs" && key != "clairfs") {
      r.Problem(key + ": unknown section");
    }
  }
  if (!problems.empty()) {
    std::string all;
    for (const auto& p : problems) all += (all.empty() ? "" : "\n") + p;
    return Status::InvalidArgument(all);
  }
  c.partitions_per_node = c.partitions == 0;
  return AtNodes(c, c.job.nodes);
}

SimConfig AtNodes(SimConfig config, uint32_t nodes) {
  config.job.nodes = nodes;
  // Saturates rather than wraps for a node count no run would reach.
  if (config.partitions_per_node)
    config.partitions = nodes > UINT32_MAX / 4 ? UINT32_MAX : 4 * nodes;
  return config;
}

Result<std::vector<uint32_t>> ParseNodeList(const std::string& text) {
  std::vector<uint32_t> out;
  size_t at = 0;
  for (;;) {
    const size_t comma = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, comma - at);
    if (item.empty() || item.size() > 9 || !std::all_of(item.begin(), item.end(), ::isdigit) ||
        std::stoul(item) < 1 || std::stoul(item) > kMaxSweepNodes) {
      return Status::InvalidArgument("node counts: '" + item + "' is not a count from 1 to " +
                                     std::to_string(kMaxSweepNodes) + " (as in 1,2,4,8)");
    }
    const auto n = static_cast<uint32_t>(std::stoul(item));
    if (std::find(out.begin(), out.end(), n) != out.end()) {
      return Status::InvalidArgument("node counts: " + item + " given twice");
    }
    out.push_back(n);
    if (comma == text.size()) return out;
    at = comma + 1;
  }
}

Result<SimConfig> LoadSimConfig(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::NotFound("cannot read " + path);
  std::stringstream text;
  text << in.rdbuf();
  auto c = ParseSimConfig(text.str());
  if (!c.ok()) return Status::InvalidArgument(path + ": " + c.status().message());
  return c;
}

}  // namespace clairfs::sim
