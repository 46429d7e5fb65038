#include "fs/clairfsd/settings_diagnosis.hpp"

#include <algorithm>
#include <chrono>
#include <optional>
#include <unordered_set>
#include <utility>

#include "base/log.hpp"
#include "fs/clairfsd/prefetch_setup.hpp"
#include "prefetch/planner/match_epoch.hpp"

namespace clairfs::fs {
namespace {

namespace pf = clairfs::prefetch;

// Seeds scripts often use (docs/prefetch.md lists them).
constexpr const char* kCommonSeeds[] = {"0", "1", "42", "1234", "2021", "3407", "123", "12345"};
// World sizes tried beyond half and double the configured one.
constexpr uint64_t kWorldSizes[] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024};
constexpr uint64_t kRanksPerNode[] = {1, 2, 4, 8, 16};
constexpr uint64_t kEpochOffsets = 2;  // start epochs tried past the configured one

struct Change {
  std::string key;  // config key, "prefetch_seed"
  std::string value;
  std::string configured;
};

struct Variation {
  std::vector<Change> changes;
  Config config;
};

// The sampler setting `key` ("seed") as configured, or nullopt.
std::optional<std::string> Setting(const Config& c, const std::string& key) {
  for (const auto& [k, v] : c.prefetch_settings) {
    if (k == key) return v;
  }
  return std::nullopt;
}

bool On(const std::string& v) { return v == "true" || v == "yes" || v == "on" || v == "1"; }

// `c` with the sampler setting `key` set to `value` (and its no_ form gone).
Config WithSetting(Config c, const std::string& key, const std::string& value) {
  auto& s = c.prefetch_settings;
  s.erase(
      std::remove_if(s.begin(), s.end(),
                     [&](const auto& kv) { return kv.first == key || kv.first == "no_" + key; }),
      s.end());
  s.emplace_back(key, value);
  return c;
}

// The directory below the configured root holding every opened file, when
// there is a deeper one than the root ("" otherwise).
std::string CommonDirectory(const format::Manifest& m, const std::vector<uint32_t>& opens) {
  std::string common;
  bool first = true;
  for (uint32_t f : opens) {
    const std::string path = m.Path(f);
    const size_t slash = path.rfind('/');
    const std::string dir = slash == std::string::npos ? "" : path.substr(0, slash);
    if (first) {
      common = dir;
      first = false;
      continue;
    }
    size_t n = 0;
    while (n < common.size() && n < dir.size() && common[n] == dir[n]) ++n;
    // Cut back to a whole directory name.
    if (!(n == common.size() && (n == dir.size() || dir[n] == '/'))) {
      while (n > 0 && common[n - 1] != '/') --n;
      common.resize(n > 0 ? n - 1 : 0);
    }
  }
  return common;
}

std::vector<Variation> Variations(const Config& c, const format::Manifest& m, uint64_t nodes,
                                  const std::vector<uint32_t>& opens) {
  std::vector<Variation> out;
  auto add = [&](std::vector<Change> changes, Config config) {
    if (out.size() < kMaxVariations) out.push_back({std::move(changes), std::move(config)});
  };
  const uint64_t world = c.prefetch_world_size;
  const std::string world_text = std::to_string(world);
  const uint64_t per_node = c.prefetch_ranks_per_node;
  // Half and double first: the likeliest slips.
  std::vector<uint64_t> worlds;
  if (world >= 2) worlds.push_back(world / 2);
  worlds.push_back(world * 2);
  for (uint64_t w : kWorldSizes) worlds.push_back(w);
  std::vector<uint64_t> seen{world};
  for (uint64_t w : worlds) {
    if (w == 0 || std::find(seen.begin(), seen.end(), w) != seen.end()) continue;
    seen.push_back(w);
    Config v = c;
    v.prefetch_world_size = w;
    // With ranks per node fixed, also with the world spread over the nodes.
    std::vector<uint64_t> spreads{per_node};
    const uint64_t spread = std::max<uint64_t>(1, w / std::max<uint64_t>(1, nodes));
    if (per_node != 0 && spread != per_node) spreads.push_back(spread);
    for (uint64_t pn : spreads) {
      if (pn > w) continue;
      v.prefetch_ranks_per_node = pn;
      std::vector<Change> ch{{"prefetch_world_size", std::to_string(w), world_text}};
      if (pn != per_node) {
        ch.push_back({"prefetch_ranks_per_node", std::to_string(pn), std::to_string(per_node)});
      }
      add(std::move(ch), v);
    }
  }
  const uint64_t effective = per_node != 0 ? per_node : std::max<uint64_t>(1, world / nodes);
  for (uint64_t pn : kRanksPerNode) {
    if (pn == effective || pn > world) continue;
    Config v = c;
    v.prefetch_ranks_per_node = pn;
    add({{"prefetch_ranks_per_node", std::to_string(pn), std::to_string(effective)}}, v);
  }
  const bool drop_last = On(Setting(c, "drop_last").value_or("false"));
  add({{"prefetch_drop_last", drop_last ? "false" : "true", drop_last ? "true" : "false"}},
      WithSetting(c, "drop_last", drop_last ? "false" : "true"));
  const bool shuffle =
      On(Setting(c, "shuffle").value_or("true")) && !On(Setting(c, "no_shuffle").value_or("false"));
  add({{"prefetch_shuffle", shuffle ? "false" : "true", shuffle ? "true" : "false"}},
      WithSetting(c, "shuffle", shuffle ? "false" : "true"));
  const std::optional<std::string> seed = Setting(c, "seed");
  for (const char* s : kCommonSeeds) {
    if (seed == s) continue;
    add({{"prefetch_seed", s, seed.value_or("unset")}}, WithSetting(c, "seed", s));
  }
  for (uint64_t d = 1; d <= kEpochOffsets; ++d) {
    Config v = c;
    v.prefetch_start_epoch = c.prefetch_start_epoch + d;
    add({{"prefetch_start_epoch", std::to_string(v.prefetch_start_epoch),
          std::to_string(c.prefetch_start_epoch)}},
        v);
  }
  if (c.prefetch_start_epoch > 0) {
    Config v = c;
    v.prefetch_start_epoch = 0;
    add({{"prefetch_start_epoch", "0", std::to_string(c.prefetch_start_epoch)}}, v);
  }
  const std::string dir = CommonDirectory(m, opens);
  if (dir.size() > c.prefetch_root.size() &&
      dir.compare(0, c.prefetch_root.size(), c.prefetch_root) == 0) {
    Config v = c;
    v.prefetch_root = dir;
    add({{"prefetch_root", dir, c.prefetch_root}}, v);
  }
  return out;
}

// How well an order fits the opens: the distinct opened files it places
// together (MatchEpoch), and the entries of this node's slots from the first
// to the last of them. An order that holds the true one's entries among
// others (world size 1 holds every rank's files) places as many over more
// entries: the fewer, the closer the fit.
struct Fit {
  uint64_t score = 0;
  uint64_t spanned = 0;
  bool Beats(const Fit& o) const {
    return score > o.score || (score == o.score && spanned < o.spanned);
  }
};

// How a job's first epoch (for this node's ranks) fits the opens; nullopt
// when the settings do not build, give this node no ranks or no read order
// (batch mode). `listing`: the files under `c`'s root (null: listed here);
// `like`: a job over that root whose file map to reuse.
std::optional<Fit> Score(const Config& c, const format::Manifest& m, const pf::Listing* listing,
                         const PrefetchJob* like, uint64_t node, uint64_t nodes,
                         const std::vector<uint32_t>& opens, PrefetchJob* built = nullptr) {
  Result<PrefetchJob> job = listing != nullptr
                                ? BuildPrefetchJobOver(c, m, *listing, node, nodes, like)
                                : BuildPrefetchJob(c, m, node, nodes);
  if (!job.ok() || !job->config.enabled) return std::nullopt;
  const pf::PlannerConfig& pc = job->config;
  auto batches = job->input.batches(pc.local_ranks.front(), pc.start_epoch);
  if (!batches.ok() || batches->has_value()) return std::nullopt;
  Result<pf::PlannerShape> shape = pf::ValidatePlannerConfig(pc, job->input);
  if (!shape.ok()) return std::nullopt;
  auto orders = job->input.order(pc.local_ranks, pc.start_epoch);
  if (!orders.ok()) return std::nullopt;
  std::vector<std::vector<pf::FileId>> slots(orders->size());
  const std::vector<pf::FileId>& file_of = job->input.file_of_index;
  for (size_t g = 0; g < orders->size(); ++g) {
    slots[g].reserve((*orders)[g].size());
    for (pf::Index i : (*orders)[g]) {
      slots[g].push_back(i < file_of.size() ? file_of[i] : pf::kNoFile);
    }
  }
  // The first opens spread over at most as many steps as there are of them,
  // plus the loader's reach: the resync's span, widened by that.
  const uint64_t span = shape->match_steps + opens.size();
  const pf::EpochMatch match = pf::MatchEpoch(slots, opens, span);
  Fit fit;
  fit.score = match.score;
  if (!match.entries.empty()) {
    uint64_t lo = UINT64_MAX, hi = 0;
    for (const auto& [g, k] : match.entries) {
      lo = std::min(lo, k);
      hi = std::max(hi, k);
    }
    fit.spanned = (hi - lo + 1) * slots.size();
  }
  if (built != nullptr) *built = std::move(*job);
  return fit;
}

std::string Describe(const std::vector<Change>& changes, bool with_configured) {
  std::string out;
  for (const Change& ch : changes) {
    if (!out.empty()) out += with_configured ? " and " : ",";
    out += ch.key + "=" + ch.value;
    if (with_configured) out += " (configured: " + ch.configured + ")";
  }
  return out;
}

}  // namespace

Result<SettingsDiagnosis> DiagnoseSettings(const Config& config, const format::Manifest& manifest,
                                           uint64_t node, uint64_t nodes,
                                           const std::vector<uint32_t>& opens) {
  if (opens.empty()) return Status::InvalidArgument("no opens to check the settings against");
  auto root = manifest.Resolve(config.prefetch_root);
  if (!root.ok() || !manifest.IsDirectory(*root)) {
    return Status::InvalidArgument("prefetch_root: '" + config.prefetch_root +
                                   "' is not a directory of the dataset");
  }
  Result<pf::Listing> listing = ListingFromManifest(manifest, *root);
  if (!listing.ok()) return listing.status();
  PrefetchJob base;
  const std::optional<Fit> configured =
      Score(config, manifest, &*listing, nullptr, node, nodes, opens, &base);
  if (!configured) {
    return Status::InvalidArgument("the configured prefetch settings give no order to check");
  }
  const std::unordered_set<uint32_t> distinct(opens.begin(), opens.end());
  const uint64_t n = distinct.size();
  const uint64_t need = std::max<uint64_t>(1, (3 * n + 3) / 4);  // the resync's 3/4
  SettingsDiagnosis d;
  d.variations = 1;
  const Variation* best = nullptr;
  Fit best_fit = *configured;
  const std::vector<Variation> variations = Variations(config, manifest, nodes, opens);
  for (const Variation& v : variations) {
    const bool same_root = v.config.prefetch_root == config.prefetch_root;
    std::optional<Fit> fit = Score(v.config, manifest, same_root ? &*listing : nullptr,
                                   same_root ? &base : nullptr, node, nodes, opens);
    if (!fit) continue;
    ++d.variations;
    if (fit->score >= need && fit->Beats(best_fit)) {
      best = &v;
      best_fit = *fit;
    }
  }
  const std::string first = "the job's first " + std::to_string(opens.size()) + " opens";
  const std::string advice = "; set it, or let the job report its order (docs/guide.md)";
  if (best != nullptr) {
    d.likely_wrong = Describe(best->changes, false);
    d.message = first + " match " + Describe(best->changes, true) + ": " +
                std::to_string(best_fit.score) + " of their " + std::to_string(n) +
                " files in place, " + std::to_string(configured->score) + " with the settings" +
                advice;
    return d;
  }
  if (configured->score >= need) {
    d.message = "the configured settings place " + std::to_string(configured->score) + " of " +
                first + "'s " + std::to_string(n) + " files: no setting looks wrong";
    return d;
  }
  if (n < opens.size() && !base.shared_stream) {
    d.likely_wrong = "prefetch_sampler";
    d.message = "of " + first + ", " + std::to_string(opens.size() - n) +
                " open a file opened before, not at once: the configured sampler reads each file "
                "once an epoch, the job's does not (a sampler with replacement, or its own); "
                "check prefetch_sampler, or let the job report its order (docs/guide.md)";
    return d;
  }
  d.likely_wrong = "prefetch_seed";
  d.message = "none of " + std::to_string(d.variations - 1) +
              " variations of the settings (world sizes, ranks per node, drop_last, shuffle, "
              "seeds 0, 1, 42, 1234, 2021, 3407, 123, 12345, later start epochs) matches " +
              first + ", all files of prefetch_root '" + config.prefetch_root +
              "', none opened twice: the sampler and root fit, so prefetch_seed (configured: " +
              Setting(config, "seed").value_or("unset") + ") most likely differs" + advice;
  return d;
}

std::function<std::string(const std::vector<uint32_t>&)> SettingsDiagnoser(
    Config config, std::shared_ptr<const format::Manifest> manifest, uint64_t node,
    uint64_t nodes) {
  return [config = std::move(config), manifest = std::move(manifest), node,
          nodes](const std::vector<uint32_t>& opens) -> std::string {
    const auto t0 = std::chrono::steady_clock::now();
    Result<SettingsDiagnosis> found = DiagnoseSettings(config, *manifest, node, nodes, opens);
    const auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
            .count();
    if (!found.ok()) {
      Log(LogLevel::kWarn, "prefetch: the settings could not be checked against the job's opens: " +
                               found.status().ToString());
      return "";
    }
    Log(found->likely_wrong.empty() ? LogLevel::kInfo : LogLevel::kWarn,
        "prefetch: " + found->message + " [" + std::to_string(found->variations) +
            " orders checked in " + std::to_string(ms) + " ms]");
    return found->likely_wrong;
  };
}

}  // namespace clairfs::fs
