#include "prefetch/options/order_flags.hpp"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <functional>
#include <map>
#include <set>

#include "prefetch/options/order_flags_tf.hpp"
#include "prefetch/options/order_flags_keras.hpp"

namespace clairfs::prefetch {

namespace {

using prefetch::SamplerKind;

bool ParseU64(const std::string& s, uint64_t& out) {
  if (s.empty() || s[0] == '-' || s[0] == '+') return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

// A Python int seed in [-2^63, 2^64) as its 64-bit two's complement.
bool ParseSeed(const std::string& s, uint64_t& out) {
  if (!s.empty() && s[0] == '-') {
    int64_t v;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size()) return false;
    out = static_cast<uint64_t>(v);
    return true;
  }
  return ParseU64(s, out);
}

std::vector<std::string> SplitCommas(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(',', start);
    if (end == std::string::npos) end = s.size();
    out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// The tool's own flags: the dataset to list and what to print.
const std::set<std::string> kToolValued = {"--root", "--listing", "--epochs", "--epoch", "--rank"};
const std::set<std::string> kToolSwitches = {"--indices", "--batches", "--help", "-h"};

}  // namespace

bool IsSamplerSwitch(const std::string& flag) {
  static const std::set<std::string> kSwitches = {"--drop-last", "--no-shuffle", "--no-set-epoch"};
  return kSwitches.count(flag) > 0 || TfSwitchFlags().count(flag) > 0 ||
         std::find(kKerasSwitches.begin(), kKerasSwitches.end(), flag) != kKerasSwitches.end();
}

bool IsSamplerValued(const std::string& flag) {
  static const std::set<std::string> kValued = {
      "--sampler",        "--layout",          "--extensions",  "--world-size",
      "--seed",           "--generator-seed",  "--num-samples", "--loader-generator",
      "--torch-version",  "--keras-version",   "--labels",      "--validation-split",
      "--subset",         "--batch-size",      "--order-file"};
  return kValued.count(flag) > 0 || TfValuedFlags().count(flag) > 0 ||
         std::find(kKerasValuedFlags.begin(), kKerasValuedFlags.end(), flag) !=
             kKerasValuedFlags.end();
}

Result<OrderFlags> ParseFlags(const std::vector<std::string>& args, FlagsFor who) {
  const bool tool = who == FlagsFor::kOrderTool;
  OrderFlags f;
  std::vector<std::string> errors;
  std::map<std::string, std::string> values;  // flag -> value (valued flags)
  std::set<std::string> switches;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string a = args[i];
    std::string value;
    bool inline_value = false;
    if (size_t eq = a.find('='); a.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = a.substr(eq + 1);
      a = a.substr(0, eq);
      inline_value = true;
    }
    if (IsSamplerSwitch(a) || (tool && kToolSwitches.count(a))) {
      if (inline_value) errors.push_back(a + " takes no value");
      switches.insert(a);
    } else if (IsSamplerValued(a) || (tool && kToolValued.count(a))) {
      if (!inline_value) {
        if (i + 1 >= args.size()) {
          errors.push_back(a + " needs a value");
          continue;
        }
        value = args[++i];
      }
      if (values.count(a)) errors.push_back(a + " given twice");
      values[a] = value;
    } else {
      errors.push_back("unknown argument '" + args[i] + "'");
    }
  }
  if (switches.count("--help") || switches.count("-h")) {
    f.help = true;
    return f;
  }

  auto has = [&](const std::string& k) { return values.count(k) > 0; };
  auto u64 = [&](const std::string& k, uint64_t& out, uint64_t min) {
    if (!has(k)) return;
    if (!ParseU64(values[k], out) || out < min) {
      errors.push_back(k + ": '" + values[k] + "' is not an integer >= " + std::to_string(min));
    }
  };

  auto& spec = f.spec;
  if (has("--sampler")) {
    auto kind = prefetch::ParseSamplerKind(values["--sampler"]);
    if (kind.ok())
      spec.kind = kind.value();
    else
      errors.push_back(kind.status().message());
  }
  SamplerKind kind = spec.kind;
  bool tf = kind == SamplerKind::kTfListFiles;
  bool flow = kind == SamplerKind::kKerasFlow;
  bool torch = kind == SamplerKind::kTorchDistributed || kind == SamplerKind::kTorchRandom ||
               kind == SamplerKind::kTorchSequential;

  // Which flags each sampler uses; anything else is a mistake worth reporting.
  const std::map<std::string, std::function<bool()>> kUsedBy = {
      {"--seed",
       [&] {
         return kind == SamplerKind::kTorchDistributed || kind == SamplerKind::kKeras || tf ||
                flow;
       }},
      {"--drop-last", [&] { return kind == SamplerKind::kTorchDistributed; }},
      {"--no-set-epoch", [&] { return kind == SamplerKind::kTorchDistributed; }},
      {"--no-shuffle",
       [&] {
         return kind == SamplerKind::kTorchDistributed || kind == SamplerKind::kKeras || tf ||
                flow;
       }},
      {"--generator-seed", [&] { return kind == SamplerKind::kTorchRandom; }},
      {"--num-samples", [&] { return kind == SamplerKind::kTorchRandom; }},
      {"--loader-generator", [&] { return kind == SamplerKind::kTorchRandom; }},
      {"--torch-version", [&] { return torch; }},
      {"--layout", [&] { return torch || kind == SamplerKind::kOrderFile; }},
      {"--extensions", [&] { return torch || kind == SamplerKind::kOrderFile; }},
      {"--keras-version", [&] { return kind == SamplerKind::kKeras || flow; }},
      {"--labels", [&] { return kind == SamplerKind::kKeras; }},
      {"--validation-split", [&] { return kind == SamplerKind::kKeras || flow; }},
      {"--subset", [&] { return kind == SamplerKind::kKeras || flow; }},
      {"--batch-size", [&] { return kind == SamplerKind::kKeras || tf || flow; }},
      {"--world-size", [&] { return kind == SamplerKind::kTorchDistributed; }},
      {"--order-file", [&] { return kind == SamplerKind::kOrderFile; }},
  };
  std::string kind_name(prefetch::SamplerKindName(kind));
  for (const auto& [flag, used] : kUsedBy) {
    if ((has(flag) || switches.count(flag)) && !used()) {
      errors.push_back(flag + " does not apply to --sampler " + kind_name);
    }
  }
  for (const auto& flag : kKerasValuedFlags) {
    if (has(flag) && !KerasFlagApplies(flag, kind))
      errors.push_back(flag + " does not apply to --sampler " + kind_name);
  }
  for (const auto& flag : kKerasSwitches) {
    if (switches.count(flag) && !KerasFlagApplies(flag, kind))
      errors.push_back(flag + " does not apply to --sampler " + kind_name);
  }

  f.root = has("--root") ? values["--root"] : "";
  f.listing = has("--listing") ? values["--listing"] : "";
  if (has("--root") && has("--listing")) errors.push_back("give --root or --listing, not both");
  if (tool && kind != SamplerKind::kOrderFile && !has("--root") && !has("--listing")) {
    errors.push_back("--root DIR or --listing FILE is required");
  }
  if (has("--layout")) {
    if (values["--layout"] == "image-folder")
      spec.layout = prefetch::DatasetLayout::kImageFolder;
    else if (values["--layout"] == "list")
      spec.layout = prefetch::DatasetLayout::kListOrder;
    else
      errors.push_back("--layout: expected image-folder or list, got '" + values["--layout"] + "'");
  }
  if (has("--extensions")) {
    spec.image_folder.extensions.clear();
    for (std::string e : SplitCommas(values["--extensions"])) {
      if (e.empty() || e.find('/') != std::string::npos) {
        errors.push_back("--extensions: '" + e + "' is not a file name suffix");
        continue;
      }
      for (char& c : e) c = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
      spec.image_folder.extensions.push_back(e);
    }
  }

  f.epochs_given = has("--epochs");
  u64("--epochs", f.epochs, 1);
  if (has("--epoch")) {
    uint64_t e = 0;
    u64("--epoch", e, 0);
    f.epoch = e;
    if (f.epochs_given) errors.push_back("give --epochs or --epoch, not both");
  }
  u64("--rank", f.rank, 0);
  u64("--world-size", spec.distributed.num_replicas, 1);
  if (kind == SamplerKind::kTorchDistributed && f.rank >= spec.distributed.num_replicas) {
    errors.push_back("--rank " + std::to_string(f.rank) + " is not below --world-size " +
                     std::to_string(spec.distributed.num_replicas));
  }
  if ((kind == SamplerKind::kTorchRandom || kind == SamplerKind::kTorchSequential ||
       kind == SamplerKind::kKeras || flow) &&
      f.rank != 0) {
    errors.push_back("--rank: sampler " + kind_name + " has a single consumer, rank 0");
  }
  f.print_indices = switches.count("--indices") > 0;
  f.print_batches = switches.count("--batches") > 0;
  if (f.print_batches && !flow) errors.push_back("--batches applies to --sampler keras-flow");

  if (has("--torch-version")) {
    auto v = prefetch::TorchVersion::Parse(values["--torch-version"]);
    if (v.ok())
      spec.distributed.torch_version = spec.random.torch_version = v.value();
    else
      errors.push_back("--torch-version: " + v.status().message());
  }
  spec.distributed.drop_last = switches.count("--drop-last") > 0;
  spec.distributed.set_epoch_called = switches.count("--no-set-epoch") == 0;
  spec.distributed.shuffle = spec.keras.shuffle = switches.count("--no-shuffle") == 0;
  if (has("--seed") && !tf) {
    uint64_t s;
    if (!ParseSeed(values["--seed"], s)) {
      errors.push_back("--seed: '" + values["--seed"] + "' is not a 64-bit integer");
    } else if (kind == SamplerKind::kKeras && s > 0xffffffffull) {
      errors.push_back("--seed: Keras (numpy RandomState) needs 0 <= seed < 2^32");
    } else {
      spec.distributed.seed = spec.keras.seed = s;
    }
  } else if (kind == SamplerKind::kKeras && spec.keras.shuffle && !has("--numpy-seed")) {
    errors.push_back("--seed is required for keras: without one Keras picks a random seed "
                     "(np.random.randint(1e6)); pass seed=S to image_dataset_from_directory "
                     "(or give --numpy-seed G after keras.utils.set_random_seed(G))");
  }
  if (has("--generator-seed") &&
      !ParseSeed(values["--generator-seed"], spec.random.generator_seed)) {
    errors.push_back("--generator-seed: '" + values["--generator-seed"] +
                     "' is not a 64-bit integer");
  }
  if (has("--num-samples")) {
    uint64_t k = 0;
    u64("--num-samples", k, 1);
    spec.random.num_samples = k;
  }
  if (has("--loader-generator")) {
    const std::string& m = values["--loader-generator"];
    if (m == "none")
      spec.random.loader_draw = prefetch::LoaderSeedDraw::kNone;
    else if (m == "every-epoch")
      spec.random.loader_draw = prefetch::LoaderSeedDraw::kEveryEpoch;
    else if (m == "persistent")
      spec.random.loader_draw = prefetch::LoaderSeedDraw::kFirstEpoch;
    else
      errors.push_back("--loader-generator: expected none, every-epoch or persistent, got '" + m +
                       "'");
  }

  if (has("--keras-version")) {
    auto v = prefetch::KerasVersion::Parse(values["--keras-version"]);
    if (v.ok())
      spec.keras.version = v.value();
    else
      errors.push_back("--keras-version: " + v.status().message());
  }
  if (has("--labels")) {
    if (values["--labels"] == "inferred")
      spec.keras.labels_inferred = true;
    else if (values["--labels"] == "none")
      spec.keras.labels_inferred = false;
    else
      errors.push_back("--labels: expected inferred or none, got '" + values["--labels"] + "'");
  }
  if (has("--validation-split")) {
    const std::string& v = values["--validation-split"];
    char* end = nullptr;
    double d = std::strtod(v.c_str(), &end);
    if (v.empty() || end != v.c_str() + v.size() || !(d >= 0 && d < 1)) {
      errors.push_back("--validation-split: '" + v + "' is not a number in [0, 1)");
    } else {
      spec.keras.validation_split = d;
    }
  }
  if (has("--subset")) {
    using Subset = prefetch::KerasListingOptions::Subset;
    if (values["--subset"] == "training")
      spec.keras.subset = Subset::kTraining;
    else if (values["--subset"] == "validation")
      spec.keras.subset = Subset::kValidation;
    else
      errors.push_back("--subset: expected training or validation, got '" + values["--subset"] +
                       "'");
  }
  if (kind == SamplerKind::kKeras && has("--batch-size") && values["--batch-size"] == "none") {
    spec.keras.batch_size = 0;  // batch_size=None (tf.data path of Keras >= 3.3 only)
  } else if (!tf) {
    u64("--batch-size", spec.keras.batch_size, 1);
  }
  ApplyTfFlags(values, switches, f, errors);

  ParseKerasFlags(values, switches, spec, errors);

  if (kind == SamplerKind::kOrderFile) {
    if (!has("--order-file"))
      errors.push_back("--order-file F is required for --sampler order-file");
    else
      spec.order_file = values["--order-file"];
  }

  if (!errors.empty()) {
    std::string msg;
    for (const std::string& e : errors) msg += (msg.empty() ? "" : "\n") + e;
    return Status::InvalidArgument(msg);
  }
  return f;
}

}  // namespace clairfs::prefetch
