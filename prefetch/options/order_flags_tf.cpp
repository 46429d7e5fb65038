#include "prefetch/options/order_flags_tf.hpp"

#include <charconv>

#include "prefetch/rng/numpy_random.hpp"

namespace clairfs::prefetch {

namespace {

using prefetch::SamplerKind;

bool ParseI64(const std::string& s, int64_t& out) {
  const char* begin = s.data() + (!s.empty() && s[0] == '+' ? 1 : 0);
  auto [p, ec] = std::from_chars(begin, s.data() + s.size(), out);
  return !s.empty() && ec == std::errc() && p == s.data() + s.size();
}

bool ParseU64(const std::string& s, uint64_t& out) {
  if (s.empty() || s[0] == '-' || s[0] == '+') return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

}  // namespace

const std::set<std::string>& TfValuedFlags() {
  static const std::set<std::string> kFlags = {
      "--glob",          "--global-seed", "--op-seed-draw",     "--shard",
      "--shard-index",   "--driver",      "--buffer-size",      "--steps-per-epoch",
      "--repeat",        "--numpy-seed"};
  return kFlags;
}

const std::set<std::string>& TfSwitchFlags() {
  static const std::set<std::string> kFlags = {"--no-reshuffle", "--shard-before-shuffle",
                                               "--validation-same", "--repeat-before-shuffle",
                                               "--no-repeat-fusion"};
  return kFlags;
}

void ApplyTfFlags(std::map<std::string, std::string>& values, const std::set<std::string>& switches,
                  OrderFlags& f, std::vector<std::string>& errors) {
  const SamplerKind kind = f.spec.kind;
  const bool list_files = kind == SamplerKind::kTfListFiles;
  const bool keras = kind == SamplerKind::kKeras;
  auto has = [&](const std::string& k) { return values.count(k) > 0 || switches.count(k) > 0; };
  const std::set<std::string> kListFilesOnly = {"--glob",        "--shard",
                                                "--shard-index", "--buffer-size",
                                                "--no-reshuffle", "--shard-before-shuffle",
                                                "--op-seed-draw", "--repeat",
                                                "--repeat-before-shuffle", "--no-repeat-fusion"};
  auto used = [&](const std::string& flag) {
    if (flag == "--numpy-seed") return keras;
    // model.fit(steps_per_epoch=) on flow_from_directory: order_flags_keras.cpp.
    if (flag == "--steps-per-epoch" && kind == SamplerKind::kKerasFlow) return true;
    return list_files || (keras && !kListFilesOnly.count(flag));
  };
  for (const auto* flags : {&TfValuedFlags(), &TfSwitchFlags()}) {
    for (const std::string& flag : *flags) {
      if (has(flag) && !used(flag)) {
        errors.push_back(flag + " does not apply to --sampler " +
                         std::string(prefetch::SamplerKindName(kind)));
      }
    }
  }
  if (!list_files && !keras) return;

  prefetch::TfDataOptions& t = f.spec.tf;
  auto u64 = [&](const std::string& k, uint64_t& out, uint64_t min) {
    if (!values.count(k)) return;
    if (!ParseU64(values[k], out) || out < min) {
      errors.push_back(k + ": '" + values[k] + "' is not an integer >= " + std::to_string(min));
    }
  };
  if (values.count("--global-seed")) {
    int64_t g = 0;
    if (ParseI64(values["--global-seed"], g))
      t.seed.global_seed = g;
    else
      errors.push_back("--global-seed: '" + values["--global-seed"] +
                       "' is not a 64-bit signed integer");
  }
  if (values.count("--driver")) {
    auto d = prefetch::ParseTfDriver(values["--driver"]);
    if (d.ok())
      t.driver = d.value();
    else
      errors.push_back("--driver: " + d.status().message());
  } else if (keras) {
    t.driver = prefetch::TfDriver::kKeras3Fit;  // image_dataset_from_directory + Keras 3
  }
  u64("--steps-per-epoch", t.steps_per_epoch, 1);
  t.validation_same = switches.count("--validation-same") > 0;
  if (t.driver == prefetch::TfDriver::kLoop && (t.validation_same || t.steps_per_epoch != 0)) {
    errors.push_back("--steps-per-epoch and --validation-same need --driver keras3-fit or "
                     "keras2-fit");
  }
  if (keras && values.count("--numpy-seed")) {
    // image_dataset_from_directory(seed=None) draws seed = np.random.randint(1e6)
    // from NumPy's global RandomState (keras/src/utils/image_dataset_utils.py;
    // the same in tf.keras 2.15), which keras.utils.set_random_seed(G) seeds.
    uint64_t g = 0;
    if (values.count("--seed")) {
      errors.push_back("give --seed or --numpy-seed, not both");
    } else if (!ParseU64(values["--numpy-seed"], g) || g > 0xffffffffull) {
      errors.push_back("--numpy-seed: '" + values["--numpy-seed"] +
                       "' is not an integer in [0, 2^32)");
    } else {
      prefetch::NumpyRandomState global(static_cast<uint32_t>(g));
      f.spec.keras.seed = global.RandomInterval(999999);
    }
  }
  if (!list_files) return;

  if (!values.count("--glob")) errors.push_back("--glob PATTERN is required for tf-list-files");
  t.glob = values.count("--glob") ? values["--glob"] : "";
  t.shuffle = switches.count("--no-shuffle") == 0;
  t.reshuffle_each_iteration = switches.count("--no-reshuffle") == 0;
  t.shard_before_shuffle = switches.count("--shard-before-shuffle") > 0;
  u64("--op-seed-draw", t.seed.op_seed_draw, 0);
  u64("--buffer-size", t.buffer_size, 1);
  u64("--shard", t.num_shards, 1);
  if (values.count("--repeat")) {
    if (values["--repeat"] == "forever")
      t.repeat = 0;
    else
      u64("--repeat", t.repeat, 1);
  }
  t.repeat_before_shuffle = switches.count("--repeat-before-shuffle") > 0;
  t.repeat_fusion = switches.count("--no-repeat-fusion") == 0;
  if (t.repeat_before_shuffle && !values.count("--repeat")) {
    errors.push_back("--repeat-before-shuffle needs --repeat N|forever");
  }
  if (values.count("--batch-size")) u64("--batch-size", t.batch_size, 1);
  if (values.count("--shard-index")) {
    if (values.count("--rank")) errors.push_back("give --shard-index or --rank, not both");
    u64("--shard-index", f.rank, 0);
  }
  if (f.rank >= t.num_shards) {
    errors.push_back("--shard-index " + std::to_string(f.rank) + " is not below --shard " +
                     std::to_string(t.num_shards));
  }
  if (values.count("--seed")) {
    int64_t s = 0;
    if (ParseI64(values["--seed"], s))
      t.seed.op_seed = s;
    else
      errors.push_back("--seed: '" + values["--seed"] + "' is not a 64-bit signed integer");
  } else if (t.shuffle && !t.seed.global_seed) {
    errors.push_back("--seed S (list_files' seed=) or --global-seed G is required: without "
                     "either TensorFlow shuffles with a random seed; pass seed= to list_files");
  }
}

}  // namespace clairfs::prefetch
