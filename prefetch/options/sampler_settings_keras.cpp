// The Keras settings: --sampler keras (image_dataset_from_directory) and
// --sampler keras-flow (ImageDataGenerator.flow_from_directory), which takes
// --keras-version, --batch-size, --validation-split, --subset and
// --follow-links as keras does and copies them into its own options.
#include "prefetch/options/sampler_settings_rows.hpp"

namespace clairfs::prefetch {

namespace {

using K = SamplerKind;

bool Keras(K k) { return k == K::kKeras; }
bool Flow(K k) { return k == K::kKerasFlow; }
bool KerasOrFlow(K k) { return k == K::kKeras || k == K::kKerasFlow; }

bool ParseOnOff(const std::string& s, bool& out) {
  if (s == "on" || s == "true" || s == "1") return out = true, true;
  if (s == "off" || s == "false" || s == "0") return out = false, true;
  return false;
}

bool FitProtocol(SettingContext& ctx, const char* setting) {
  if (ctx.spec().keras_flow.protocol == KerasFlowOptions::Protocol::kFit) return true;
  ctx.Error(ctx.Name(setting) + " applies to " + ctx.Name("protocol") + " fit only");
  return false;
}

void SetBatchSizeText(SettingContext& ctx, const std::string& v) {
  uint64_t b = 0;
  if (ctx.kind() == K::kKeras && v == "none") {
    ctx.spec().keras.batch_size = 0;  // batch_size=None (tf.data path of Keras >= 3.3 only)
  } else if (ctx.U64("batch-size", v, 1, &b)) {
    SetBatchSize(ctx.spec(), b);
  }
}

void SetValidationSplit(SettingContext& ctx, const std::string& v) {
  char* end = nullptr;
  const double d = std::strtod(v.c_str(), &end);
  if (v.empty() || end != v.c_str() + v.size() || !(d >= 0 && d < 1)) {
    ctx.Error(ctx.Name("validation-split") + ": '" + v + "' is not a number in [0, 1)");
  } else {
    ctx.spec().keras.validation_split = d;
  }
}

void SetSubset(SettingContext& ctx, const std::string& v) {
  using Subset = KerasListingOptions::Subset;
  if (v == "training") {
    ctx.spec().keras.subset = Subset::kTraining;
  } else if (v == "validation") {
    ctx.spec().keras.subset = Subset::kValidation;
  } else {
    ctx.Error(ctx.Name("subset") + ": expected training or validation, got '" + v + "'");
  }
}

void SetProtocol(SettingContext& ctx, const std::string& v) {
  using Protocol = KerasFlowOptions::Protocol;
  if (v == "next") {
    ctx.spec().keras_flow.protocol = Protocol::kNext;
  } else if (v == "fit") {
    ctx.spec().keras_flow.protocol = Protocol::kFit;
  } else {
    ctx.Error(ctx.Name("protocol") + ": expected next or fit, got '" + v + "'");
  }
}

}  // namespace

void SetBatchSize(OrderSpec& spec, uint64_t batch_size) {
  if (spec.kind == K::kTfListFiles) {
    spec.tf.batch_size = batch_size;
  } else {
    spec.keras.batch_size = batch_size;  // keras-flow's is copied by CheckKerasSettings
  }
}

// Rows in the order they are set: --protocol before the settings that need it.
std::vector<SamplerSetting> KerasSettingRows() {
  return {
      {"keras-version", false, "MAJOR.MINOR[.PATCH] (default 3.15)", KerasOrFlow,
       [](SettingContext& ctx, const std::string& v) {
         auto version = KerasVersion::Parse(v);
         if (version.ok()) {
           ctx.spec().keras.version = *version;
         } else {
           ctx.Error(ctx.Name("keras-version") + ": " + version.status().message());
         }
       }},
      {"labels", false, "inferred (default) or none", Keras,
       [](SettingContext& ctx, const std::string& v) {
         if (v == "inferred" || v == "none") {
           ctx.spec().keras.labels_inferred = v == "inferred";
         } else {
           ctx.Error(ctx.Name("labels") + ": expected inferred or none, got '" + v + "'");
         }
       }},
      {"validation-split", false, "the validation fraction, in [0, 1)", KerasOrFlow,
       SetValidationSplit},
      {"subset", false, "training or validation", KerasOrFlow, SetSubset},
      {"batch-size", false, "batch_size (keras: default 32, 'none' = None; tf: .batch(B))",
       [](K k) { return KerasOrFlow(k) || k == K::kTfListFiles; }, SetBatchSizeText},
      {"class-names", false, "class_names=[...], comma-separated", Keras,
       [](SettingContext& ctx, const std::string& v) {
         ctx.spec().keras.class_names = SplitCommas(v);
       }},
      {"follow-links", true, "follow_links=True", KerasOrFlow,
       [](SettingContext& ctx, const std::string&) { ctx.spec().keras.follow_links = true; }},
      {"classes", false, "classes=[...], comma-separated", Flow,
       [](SettingContext& ctx, const std::string& v) {
         ctx.spec().keras_flow.classes = SplitCommas(v);
       }},
      {"augment", false, "ImageDataGenerator options, e.g. rotation_range=10", Flow,
       [](SettingContext& ctx, const std::string& v) {
         auto a = KerasFlowAugment::Parse(v);
         if (a.ok()) {
           ctx.spec().keras_flow.augment = *a;
         } else {
           ctx.Error(a.status().message());
         }
       }},
      {"protocol", false, "next (default) or fit", Flow, SetProtocol},
      {"fit-shuffle", false, "model.fit(shuffle=), on (default) or off", Flow,
       [](SettingContext& ctx, const std::string& v) {
         if (!ParseOnOff(v, ctx.spec().keras_flow.fit_shuffle)) {
           ctx.Error(ctx.Name("fit-shuffle") + ": expected on or off, got '" + v + "'");
         } else {
           FitProtocol(ctx, "fit-shuffle");
         }
       }},
      {"fit-validation-seed", false, "fit(validation_data=) iterator's seed", Flow,
       [](SettingContext& ctx, const std::string& v) {
         uint64_t s = 0;
         if (!ParseU64Text(v, s) || s > 0xffffffffull) {
           ctx.Error(ctx.Name("fit-validation-seed") + ": '" + v + "' is not in [0, 2^32)");
         } else if (FitProtocol(ctx, "fit-validation-seed")) {
           ctx.spec().keras_flow.fit_validation_seed = s;
         }
       }},
  };
}

void CheckKerasSettings(SettingContext& ctx) {
  if (ctx.kind() != K::kKerasFlow) return;
  OrderSpec& spec = ctx.spec();
  KerasFlowOptions& o = spec.keras_flow;
  o.follow_links = spec.keras.follow_links;
  o.version = spec.keras.version;
  o.batch_size = spec.keras.batch_size;
  if (ctx.Has("validation-split")) o.validation_split = spec.keras.validation_split;
  if (ctx.Has("subset")) {
    o.subset = spec.keras.subset == KerasListingOptions::Subset::kTraining
                   ? KerasFlowOptions::Subset::kTraining
                   : KerasFlowOptions::Subset::kValidation;
  }
  if (!ctx.Has("seed") && o.shuffle) {
    ctx.Error(ctx.Name("seed") +
              " is required for keras-flow: without seed= flow_from_directory permutes with "
              "NumPy's global generator; pass seed=S to flow_from_directory (or " +
              ctx.Name("no-shuffle") + " for shuffle=False)");
  }
}

}  // namespace clairfs::prefetch
