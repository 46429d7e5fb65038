// The tf.data settings: --sampler tf-list-files, and the tf.data part of
// --sampler keras (Keras >= 3.3 shuffles its paths through tf.data).
#include "prefetch/options/sampler_settings_rows.hpp"
#include "prefetch/rng/numpy_random.hpp"

namespace clairfs::prefetch {

namespace {

using K = SamplerKind;

bool ListFiles(K k) { return k == K::kTfListFiles; }
bool TfOrKeras(K k) { return k == K::kTfListFiles || k == K::kKeras; }

void SetDriver(SettingContext& ctx, const std::string& v) {
  auto d = ParseTfDriver(v);
  if (d.ok()) {
    ctx.spec().tf.driver = *d;
  } else {
    ctx.Error(ctx.Name("driver") + ": " + d.status().message());
  }
}

void SetStepsPerEpoch(SettingContext& ctx, const std::string& v) {
  if (ctx.kind() != K::kKerasFlow) {
    ctx.U64("steps-per-epoch", v, 1, &ctx.spec().tf.steps_per_epoch);
    return;
  }
  // keras-flow: model.fit(steps_per_epoch=) on flow_from_directory.
  KerasFlowOptions& o = ctx.spec().keras_flow;
  uint64_t s = 0;
  if (!ParseU64Text(v, s) || s == 0) {
    ctx.Error(ctx.Name("steps-per-epoch") + ": '" + v +
              "' is not an integer >= 1 (model.fit's steps_per_epoch)");
  } else if (o.protocol != KerasFlowOptions::Protocol::kFit) {
    ctx.Error(ctx.Name("steps-per-epoch") + " applies to " + ctx.Name("protocol") +
              " fit only (it is model.fit(steps_per_epoch=))");
  } else {
    o.steps_per_epoch = s;
  }
}

// image_dataset_from_directory(seed=None) draws seed = np.random.randint(1e6)
// from NumPy's global RandomState (keras/src/utils/image_dataset_utils.py;
// the same in tf.keras 2.15), which keras.utils.set_random_seed(G) seeds.
void SetNumpySeed(SettingContext& ctx, const std::string& v) {
  uint64_t g = 0;
  if (ctx.Has("seed")) {
    ctx.Error("give " + ctx.Name("seed") + " or " + ctx.Name("numpy-seed") + ", not both");
  } else if (!ParseU64Text(v, g) || g > 0xffffffffull) {
    ctx.Error(ctx.Name("numpy-seed") + ": '" + v + "' is not an integer in [0, 2^32)");
  } else {
    NumpyRandomState global(static_cast<uint32_t>(g));
    ctx.spec().keras.seed = global.RandomInterval(999999);
  }
}

}  // namespace

std::vector<SamplerSetting> TfSettingRows() {
  return {
      {"glob", false, "the pattern relative to the root", ListFiles,
       [](SettingContext& ctx, const std::string& v) { ctx.spec().tf.glob = v; }},
      {"global-seed", false, "tf.random.set_seed(G) before the pipeline", TfOrKeras,
       [](SettingContext& ctx, const std::string& v) {
         int64_t g = 0;
         if (ParseI64Text(v, g)) {
           ctx.spec().tf.seed.global_seed = g;
         } else {
           ctx.Error(ctx.Name("global-seed") + ": '" + v + "' is not a 64-bit signed integer");
         }
       }},
      {"op-seed-draw", false, "which draw of the global seed's counter is the op seed", ListFiles,
       [](SettingContext& ctx, const std::string& v) {
         ctx.U64("op-seed-draw", v, 0, &ctx.spec().tf.seed.op_seed_draw);
       }},
      {"shard", false, ".shard(N, I) after the shuffle (default 1)", ListFiles,
       [](SettingContext& ctx, const std::string& v) {
         ctx.U64("shard", v, 1, &ctx.spec().tf.num_shards);
       }},
      {"shard-index", false, "this worker's I (the rank)", ListFiles,
       [](SettingContext& ctx, const std::string& v) {
         if (ctx.rank_given()) {
           ctx.Error("give " + ctx.Name("shard-index") + " or " + ctx.Name("rank") + ", not both");
         }
         ctx.U64("shard-index", v, 0, &ctx.rank());
       }},
      {"driver", false, "loop, keras3-fit or keras2-fit", TfOrKeras, SetDriver},
      {"buffer-size", false, "shuffle buffer (default: all)", ListFiles,
       [](SettingContext& ctx, const std::string& v) {
         ctx.U64("buffer-size", v, 1, &ctx.spec().tf.buffer_size);
       }},
      {"steps-per-epoch", false, "fit(steps_per_epoch=K)",
       [](K k) { return TfOrKeras(k) || k == K::kKerasFlow; }, SetStepsPerEpoch},
      {"repeat", false, ".repeat(N) or .repeat() (forever)", ListFiles,
       [](SettingContext& ctx, const std::string& v) {
         if (v == "forever") {
           ctx.spec().tf.repeat = 0;
         } else {
           ctx.U64("repeat", v, 1, &ctx.spec().tf.repeat);
         }
       }},
      {"numpy-seed", false, "seed=None after keras.utils.set_random_seed(G)",
       [](K k) { return k == K::kKeras; }, SetNumpySeed},
      {"no-reshuffle", true, "reshuffle_each_iteration=False", ListFiles,
       [](SettingContext& ctx, const std::string&) {
         ctx.spec().tf.reshuffle_each_iteration = false;
       }},
      {"shard-before-shuffle", true, ".shard(N, I) before the shuffle", ListFiles,
       [](SettingContext& ctx, const std::string&) { ctx.spec().tf.shard_before_shuffle = true; }},
      {"validation-same", true, "fit(validation_data=) with the same dataset", TfOrKeras,
       [](SettingContext& ctx, const std::string&) { ctx.spec().tf.validation_same = true; }},
      {"repeat-before-shuffle", true, ".repeat(N).shuffle(B)", ListFiles,
       [](SettingContext& ctx, const std::string&) { ctx.spec().tf.repeat_before_shuffle = true; }},
      {"no-repeat-fusion", true, "shuffle_and_repeat_fusion = False", ListFiles,
       [](SettingContext& ctx, const std::string&) { ctx.spec().tf.repeat_fusion = false; }},
  };
}

void CheckTfSettings(SettingContext& ctx) {
  const bool list_files = ctx.kind() == K::kTfListFiles;
  if (!list_files && ctx.kind() != K::kKeras) return;
  TfDataOptions& t = ctx.spec().tf;
  if (!list_files && !ctx.Has("driver")) t.driver = TfDriver::kKeras3Fit;  // Keras 3 fit
  if (t.driver == TfDriver::kLoop && (t.validation_same || t.steps_per_epoch != 0)) {
    ctx.Error(ctx.Name("steps-per-epoch") + " and " + ctx.Name("validation-same") + " need " +
              ctx.Name("driver") + " keras3-fit or keras2-fit");
  }
  if (!list_files) return;
  if (!ctx.Has("glob")) ctx.Error(ctx.Name("glob") + " PATTERN is required for tf-list-files");
  if (t.repeat_before_shuffle && !ctx.Has("repeat")) {
    ctx.Error(ctx.Name("repeat-before-shuffle") + " needs " + ctx.Name("repeat") + " N|forever");
  }
  if (ctx.rank() >= t.num_shards) {
    ctx.Error(ctx.Name("shard-index") + " " + std::to_string(ctx.rank()) + " is not below " +
              ctx.Name("shard") + " " + std::to_string(t.num_shards));
  }
  if (!ctx.Has("seed") && t.shuffle && !t.seed.global_seed) {
    ctx.Error(ctx.Name("seed") + " S (list_files' seed=) or " + ctx.Name("global-seed") +
              " G is required: without either TensorFlow shuffles with a random seed; pass "
              "seed= to list_files");
  }
}

}  // namespace clairfs::prefetch
