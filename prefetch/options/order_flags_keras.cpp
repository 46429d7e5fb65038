#include "prefetch/options/order_flags_keras.hpp"

#include <charconv>
#include <cstdlib>

namespace clairfs::prefetch {

namespace {
using prefetch::SamplerKind;

std::vector<std::string> SplitCommas(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t end = s.find(',', start);
    out.push_back(s.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) return out;
    start = end + 1;
  }
}

bool ParseBool(const std::string& s, bool& out) {
  if (s == "on" || s == "true" || s == "1") return out = true, true;
  if (s == "off" || s == "false" || s == "0") return out = false, true;
  return false;
}
}  // namespace

const std::vector<std::string> kKerasValuedFlags = {"--class-names", "--classes", "--augment",
                                                    "--protocol", "--fit-shuffle",
                                                    "--fit-validation-seed"};
const std::vector<std::string> kKerasSwitches = {"--follow-links"};

bool KerasFlagApplies(const std::string& flag, SamplerKind kind) {
  bool keras = kind == SamplerKind::kKeras;
  bool flow = kind == SamplerKind::kKerasFlow;
  if (flag == "--class-names") return keras;
  if (flag == "--follow-links") return keras || flow;
  if (flag == "--classes" || flag == "--augment" || flag == "--protocol" ||
      flag == "--fit-shuffle" || flag == "--fit-validation-seed") {
    return flow;
  }
  return false;
}

void ParseKerasFlags(const std::map<std::string, std::string>& values,
                     const std::set<std::string>& switches, prefetch::OrderSpec& spec,
                     std::vector<std::string>& errors) {
  auto get = [&](const std::string& k) -> const std::string* {
    auto it = values.find(k);
    return it == values.end() ? nullptr : &it->second;
  };
  bool follow = switches.count("--follow-links") > 0;
  spec.keras.follow_links = follow;
  if (const std::string* v = get("--class-names")) spec.keras.class_names = SplitCommas(*v);
  if (spec.kind != SamplerKind::kKerasFlow) return;

  prefetch::KerasFlowOptions& o = spec.keras_flow;
  o.follow_links = follow;
  o.version = spec.keras.version;  // --keras-version, parsed by ParseFlags
  o.shuffle = switches.count("--no-shuffle") == 0;
  o.batch_size = spec.keras.batch_size;
  if (const std::string* v = get("--seed")) {
    uint64_t s = 0;
    auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), s);
    if (ec != std::errc() || p != v->data() + v->size() || s > 0xffffffffull) {
      errors.push_back("--seed: '" + *v + "' is not in np.random.seed's range [0, 2^32)");
    } else {
      o.seed = s;
    }
  } else if (o.shuffle) {
    errors.push_back("--seed is required for keras-flow: without seed= flow_from_directory "
                     "permutes with NumPy's global generator; pass seed=S to "
                     "flow_from_directory (or --no-shuffle for shuffle=False)");
  }
  if (const std::string* v = get("--classes")) o.classes = SplitCommas(*v);
  if (get("--validation-split")) o.validation_split = spec.keras.validation_split;
  if (get("--subset")) {
    o.subset = spec.keras.subset == prefetch::KerasListingOptions::Subset::kTraining
                   ? prefetch::KerasFlowOptions::Subset::kTraining
                   : prefetch::KerasFlowOptions::Subset::kValidation;
  }
  if (const std::string* v = get("--augment")) {
    auto a = prefetch::KerasFlowAugment::Parse(*v);
    if (a.ok()) {
      o.augment = a.value();
    } else {
      errors.push_back(a.status().message());
    }
  }
  if (const std::string* v = get("--protocol")) {
    if (*v == "next") {
      o.protocol = prefetch::KerasFlowOptions::Protocol::kNext;
    } else if (*v == "fit") {
      o.protocol = prefetch::KerasFlowOptions::Protocol::kFit;
    } else {
      errors.push_back("--protocol: expected next or fit, got '" + *v + "'");
    }
  }
  if (const std::string* v = get("--fit-validation-seed")) {
    uint64_t s = 0;
    auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), s);
    if (ec != std::errc() || p != v->data() + v->size() || s > 0xffffffffull) {
      errors.push_back("--fit-validation-seed: '" + *v + "' is not in [0, 2^32)");
    } else if (o.protocol != prefetch::KerasFlowOptions::Protocol::kFit) {
      errors.push_back("--fit-validation-seed applies to --protocol fit only");
    } else {
      o.fit_validation_seed = s;
    }
  }
  if (const std::string* v = get("--steps-per-epoch")) {
    uint64_t s = 0;
    auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), s);
    if (ec != std::errc() || p != v->data() + v->size() || s == 0) {
      errors.push_back("--steps-per-epoch: '" + *v + "' is not an integer >= 1 (model.fit's "
                       "steps_per_epoch)");
    } else if (o.protocol != prefetch::KerasFlowOptions::Protocol::kFit) {
      errors.push_back("--steps-per-epoch applies to --protocol fit only (it is "
                       "model.fit(steps_per_epoch=))");
    } else {
      o.steps_per_epoch = s;
    }
  }
  if (const std::string* v = get("--fit-shuffle")) {
    if (!ParseBool(*v, o.fit_shuffle)) {
      errors.push_back("--fit-shuffle: expected on or off, got '" + *v + "'");
    } else if (o.protocol != prefetch::KerasFlowOptions::Protocol::kFit) {
      errors.push_back("--fit-shuffle applies to --protocol fit only");
    }
  }
}

}  // namespace clairfs::prefetch
