// DiagnoseSettings: when the planner over the configured sampler settings
// lost the job's order in its first epoch (Planner::FirstEpochLoss), which
// setting most likely differs from the training script's.
//
// It tries a fixed list of variations of the configured settings (listed in
// docs/prefetch.md, "Which setting is wrong"): other world sizes and ranks
// per node, drop_last and shuffle flipped, a few common seeds, a later start
// epoch, and the directory below prefetch_root all the opened files lie in.
// Each variation's first epoch is generated for this node's ranks exactly as
// the daemon generates it (BuildPrefetchJob, the sampler's OrderRanks) and
// scored with the resync's matcher (MatchEpoch) against the job's first
// opens. The best variation that places at least 3/4 of the opened files
// together, and more than the configured settings do, is named; when none
// does, what the opens themselves show is named instead (files opened twice
// in an epoch: the sampler; otherwise the seed).
//
// Cost: at most kMaxVariations orders built and one epoch of each generated
// (docs/prefetch.md gives the time for 100,000 files). Pure: no I/O, no
// logging; thread-safe (the manifest is only read).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/status.hpp"
#include "fs/config/config.hpp"
#include "partitioner/format/manifest.hpp"

namespace clairfs::fs {

struct SettingsDiagnosis {
  // For stats.json's prefetch.likely_wrong: "prefetch_world_size=4" (the
  // variation whose order matches, its changes joined by ","), or a key alone
  // ("prefetch_seed", "prefetch_sampler") when only the evidence names it;
  // "" when the configured settings place the opens as well as any variation.
  std::string likely_wrong;
  std::string message;      // one line for the log, naming what was found
  uint64_t variations = 0;  // orders generated and scored, the configured one included
};

// At most this many variations are tried, beside the configured settings.
inline constexpr size_t kMaxVariations = 48;

// `opens`: the job's first opens seen by daemon `node` of `nodes` (manifest
// nodes, oldest first; Planner::FirstEpochLoss). InvalidArgument when the
// configured settings themselves do not build (they did at start, so only
// on misuse) or `opens` is empty.
Result<SettingsDiagnosis> DiagnoseSettings(const Config& config, const format::Manifest& manifest,
                                           uint64_t node, uint64_t nodes,
                                           const std::vector<uint32_t>& opens);

// The prefetch engine's diagnose hook (PrefetchEngineOptions::diagnose) for
// daemon `node` of `nodes`: runs DiagnoseSettings over the opens it is given,
// logs its message (a warning when it names a setting) with the orders
// checked and the time taken, and returns likely_wrong. The engine calls it
// once.
std::function<std::string(const std::vector<uint32_t>& opens)> SettingsDiagnoser(
    Config config, std::shared_ptr<const format::Manifest> manifest, uint64_t node, uint64_t nodes);

}  // namespace clairfs::fs
