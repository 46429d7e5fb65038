#include "prefetch/options/sampler_settings.hpp"

#include <algorithm>
#include <charconv>
#include <cstdlib>

#include "prefetch/options/sampler_settings_rows.hpp"

namespace clairfs::prefetch {

namespace {

using K = SamplerKind;

bool Torch(K k) {
  return k == K::kTorchDistributed || k == K::kTorchRandom || k == K::kTorchSequential;
}
bool Distributed(K k) { return k == K::kTorchDistributed; }
bool Random(K k) { return k == K::kTorchRandom; }

// A Python int seed in [-2^63, 2^64) as its 64-bit two's complement.
bool ParseSeed(const std::string& s, uint64_t& out) {
  if (!s.empty() && s[0] == '-') {
    int64_t v;
    if (!ParseI64Text(s, v)) return false;
    out = static_cast<uint64_t>(v);
    return true;
  }
  return ParseU64Text(s, out);
}

void SetSampler(SettingContext& ctx, const std::string& v) {
  auto kind = ParseSamplerKind(v);
  if (kind.ok()) {
    ctx.spec().kind = *kind;
  } else {
    ctx.Error(kind.status().message());
  }
}

// Each framework takes its seed in its own range.
void SetSeed(SettingContext& ctx, const std::string& v) {
  OrderSpec& spec = ctx.spec();
  if (ctx.kind() == K::kTfListFiles) {
    int64_t s = 0;
    if (ParseI64Text(v, s)) {
      spec.tf.seed.op_seed = s;
    } else {
      ctx.Error(ctx.Name("seed") + ": '" + v + "' is not a 64-bit signed integer");
    }
    return;
  }
  if (ctx.kind() == K::kKerasFlow) {
    uint64_t s = 0;
    if (ParseU64Text(v, s) && s <= 0xffffffffull) {
      spec.keras_flow.seed = s;
    } else {
      ctx.Error(ctx.Name("seed") + ": '" + v + "' is not in np.random.seed's range [0, 2^32)");
    }
    return;
  }
  uint64_t s = 0;
  if (!ParseSeed(v, s)) {
    ctx.Error(ctx.Name("seed") + ": '" + v + "' is not a 64-bit integer");
  } else if (ctx.kind() == K::kKeras && s > 0xffffffffull) {
    ctx.Error(ctx.Name("seed") + ": Keras (numpy RandomState) needs 0 <= seed < 2^32");
  } else {
    spec.distributed.seed = spec.keras.seed = s;
  }
}

void SetLayout(SettingContext& ctx, const std::string& v) {
  ctx.spec().layout_given = true;
  if (v == "image-folder") {
    ctx.spec().layout = DatasetLayout::kImageFolder;
  } else if (v == "list") {
    ctx.spec().layout = DatasetLayout::kListOrder;
  } else {
    ctx.Error(ctx.Name("layout") + ": expected image-folder or list, got '" + v + "'");
  }
}

void SetExtensions(SettingContext& ctx, const std::string& v) {
  auto& extensions = ctx.spec().image_folder.extensions;
  extensions.clear();
  for (std::string e : SplitCommas(v)) {
    if (e.empty() || e.find('/') != std::string::npos) {
      ctx.Error(ctx.Name("extensions") + ": '" + e + "' is not a file name suffix");
      continue;
    }
    for (char& c : e) c = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    extensions.push_back(e);
  }
}

void SetLoaderGenerator(SettingContext& ctx, const std::string& m) {
  auto& draw = ctx.spec().random.loader_draw;
  if (m == "none") {
    draw = LoaderSeedDraw::kNone;
  } else if (m == "every-epoch") {
    draw = LoaderSeedDraw::kEveryEpoch;
  } else if (m == "persistent") {
    draw = LoaderSeedDraw::kFirstEpoch;
  } else {
    ctx.Error(ctx.Name("loader-generator") + ": expected none, every-epoch or persistent, got '" +
              m + "'");
  }
}

void SetTorchVersion(SettingContext& ctx, const std::string& v) {
  auto version = TorchVersion::Parse(v);
  if (version.ok()) {
    ctx.spec().distributed.torch_version = ctx.spec().random.torch_version = *version;
  } else {
    ctx.Error(ctx.Name("torch-version") + ": " + version.status().message());
  }
}

std::vector<SamplerSetting> CommonRows() {
  return {
      {"sampler", false, "the sampler (default torch-distributed)", [](K) { return true; },
       SetSampler},
      {"seed", false, "the sampler's or shuffle's seed",
       [](K k) {
         return k == K::kTorchDistributed || k == K::kKeras || k == K::kTfListFiles ||
                k == K::kKerasFlow;
       },
       SetSeed},
      {"drop-last", true, "DistributedSampler drop_last=True", Distributed,
       [](SettingContext& ctx, const std::string&) { ctx.spec().distributed.drop_last = true; }},
      {"no-set-epoch", true, "the script never calls set_epoch", Distributed,
       [](SettingContext& ctx, const std::string&) {
         ctx.spec().distributed.set_epoch_called = false;
       }},
      {"no-shuffle", true, "shuffle=False",
       [](K k) {
         return k == K::kTorchDistributed || k == K::kKeras || k == K::kTfListFiles ||
                k == K::kKerasFlow;
       },
       [](SettingContext& ctx, const std::string&) {
         ctx.spec().distributed.shuffle = ctx.spec().keras.shuffle = false;
         ctx.spec().keras_flow.shuffle = false;
         if (ctx.kind() == K::kTfListFiles) ctx.spec().tf.shuffle = false;
       }},
      {"world-size", false, "DistributedSampler num_replicas (default 1)", Distributed,
       [](SettingContext& ctx, const std::string& v) {
         ctx.U64("world-size", v, 1, &ctx.spec().distributed.num_replicas);
       }},
      {"generator-seed", false, "RandomSampler's generator manual_seed (default 0)", Random,
       [](SettingContext& ctx, const std::string& v) {
         if (!ParseSeed(v, ctx.spec().random.generator_seed)) {
           ctx.Error(ctx.Name("generator-seed") + ": '" + v + "' is not a 64-bit integer");
         }
       }},
      {"num-samples", false, "RandomSampler num_samples (default: dataset size)", Random,
       [](SettingContext& ctx, const std::string& v) {
         uint64_t k = 0;
         ctx.U64("num-samples", v, 1, &k);
         ctx.spec().random.num_samples = k;
       }},
      {"loader-generator", false, "none, every-epoch or persistent (default none)", Random,
       SetLoaderGenerator},
      {"torch-version", false, "torch release (default 1.13)", Torch, SetTorchVersion},
      {"layout", false, "image-folder (default) or list",
       [](K k) { return Torch(k) || k == K::kOrderFile; }, SetLayout},
      {"extensions", false, "comma-separated ImageFolder extensions",
       [](K k) { return Torch(k) || k == K::kOrderFile; }, SetExtensions},
      {"order-file", false, "the order file to replay", [](K k) { return k == K::kOrderFile; },
       [](SettingContext& ctx, const std::string& v) { ctx.spec().order_file = v; }},
  };
}

std::vector<SamplerSetting> AllRows() {
  std::vector<SamplerSetting> rows = CommonRows();
  for (auto* more : {&KerasSettingRows, &TfSettingRows}) {
    for (SamplerSetting& s : more()) rows.push_back(s);
  }
  return rows;
}

// What concerns several settings of the torch kinds and order files.
void CheckCommon(SettingContext& ctx) {
  const K kind = ctx.kind();
  const uint64_t world = ctx.spec().distributed.num_replicas;
  if (kind == K::kTorchDistributed && ctx.rank() >= world) {
    ctx.Error(ctx.Name("rank") + " " + std::to_string(ctx.rank()) + " is not below " +
              ctx.Name("world-size") + " " + std::to_string(world));
  }
  if ((kind == K::kTorchRandom || kind == K::kTorchSequential || kind == K::kKeras ||
       kind == K::kKerasFlow) &&
      ctx.rank() != 0) {
    ctx.Error(ctx.Name("rank") + ": sampler " + ctx.KindText() + " has a single consumer, rank 0");
  }
  if (kind == K::kKeras && !ctx.Has("seed") && !ctx.Has("no-shuffle") && !ctx.Has("numpy-seed")) {
    ctx.Error(ctx.Name("seed") +
              " is required for keras: without one Keras picks a random seed "
              "(np.random.randint(1e6)); pass seed=S to image_dataset_from_directory "
              "(or give " +
              ctx.Name("numpy-seed") + " G after keras.utils.set_random_seed(G))");
  }
  if (kind == K::kOrderFile && !ctx.Has("order-file")) {
    ctx.Error(ctx.Name("order-file") + " F is required for " + ctx.Name("sampler") + " order-file");
  }
}

}  // namespace

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

bool ParseU64Text(const std::string& s, uint64_t& out) {
  if (s.empty() || s[0] == '-' || s[0] == '+') return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

bool ParseI64Text(const std::string& s, int64_t& out) {
  const char* begin = s.data() + (!s.empty() && s[0] == '+' ? 1 : 0);
  auto [p, ec] = std::from_chars(begin, s.data() + s.size(), out);
  return !s.empty() && ec == std::errc() && p == s.data() + s.size();
}

std::string SettingName(std::string_view setting, SettingNames names) {
  if (names == SettingNames::kFlags) return "--" + std::string(setting);
  // The daemon's key: a --no-X switch is the key X (prefetch_shuffle: false).
  std::string name(setting);
  const SamplerSetting* row = FindSamplerSetting(name);
  if (row && row->is_switch && name.rfind("no-", 0) == 0) name = name.substr(3);
  for (char& c : name) {
    if (c == '-') c = '_';
  }
  return "prefetch_" + name;
}

const std::string* SettingContext::Value(std::string_view setting) const {
  auto it = given_.values.find(std::string(setting));
  return it == given_.values.end() ? nullptr : &it->second;
}

bool SettingContext::U64(std::string_view setting, const std::string& text, uint64_t min,
                         uint64_t* out) {
  uint64_t v = 0;
  if (!ParseU64Text(text, v) || v < min) {
    Error(Name(setting) + ": '" + text + "' is not an integer >= " + std::to_string(min));
    return false;
  }
  *out = v;
  return true;
}

std::string SettingContext::KindText() const { return std::string(SamplerKindName(kind())); }

const std::vector<SamplerSetting>& SamplerSettingTable() {
  static const std::vector<SamplerSetting> kTable = AllRows();
  return kTable;
}

const SamplerSetting* FindSamplerSetting(std::string_view name) {
  for (const SamplerSetting& s : SamplerSettingTable()) {
    if (name == s.name) return &s;
  }
  return nullptr;
}

std::string SamplerSettingsHelp(SettingNames names, const std::vector<std::string>& except) {
  std::string out;
  for (const SamplerSetting& s : SamplerSettingTable()) {
    if (std::find(except.begin(), except.end(), s.name) != except.end()) continue;
    std::string line = "  " + SettingName(s.name, names);
    if (s.is_switch && names == SettingNames::kKeys) {
      line += std::string(s.name).rfind("no-", 0) == 0 ? ": false" : ": true";
    }
    line.resize(std::max<size_t>(line.size() + 1, 32), ' ');
    line += s.help;
    std::string users;
    for (K k : {K::kTorchDistributed, K::kTorchRandom, K::kTorchSequential, K::kKeras,
                K::kKerasFlow, K::kTfListFiles, K::kOrderFile}) {
      if (s.applies(k)) users += (users.empty() ? "" : ", ") + std::string(SamplerKindName(k));
    }
    if (s.set != SetSampler) line += " (" + users + ")";
    out += line + "\n";
  }
  return out;
}

void BuildOrderSpec(const GivenSettings& given, OrderSpec* spec, uint64_t* rank,
                    std::vector<std::string>* errors) {
  *spec = OrderSpec{};
  SettingContext ctx(given, spec, rank, errors);
  spec->layout_name = ctx.Name("layout");
  if (const std::string* sampler = ctx.Value("sampler")) SetSampler(ctx, *sampler);
  for (const auto& [name, value] : given.values) {
    if (!FindSamplerSetting(name)) ctx.Error(ctx.Name(name) + ": unknown setting");
  }
  // In table order: a row may read what an earlier one set (the kind first).
  for (const SamplerSetting& s : SamplerSettingTable()) {
    const std::string* value = ctx.Value(s.name);
    if (!value || s.set == SetSampler) continue;
    if (!s.applies(spec->kind)) {
      ctx.Error(ctx.Name(s.name) + " does not apply to " + ctx.Name("sampler") + " " +
                ctx.KindText());
      continue;
    }
    s.set(ctx, *value);
  }
  if (given.job_world_size && spec->kind == K::kTorchDistributed && !ctx.Has("world-size")) {
    spec->distributed.num_replicas = *given.job_world_size;
  }
  if (given.job_batch_size && !ctx.Has("batch-size") &&
      FindSamplerSetting("batch-size")->applies(spec->kind)) {
    SetBatchSize(*spec, *given.job_batch_size);
  }
  CheckCommon(ctx);
  CheckKerasSettings(ctx);
  CheckTfSettings(ctx);
}

Result<OrderSpec> BuildOrderSpec(const GivenSettings& given) {
  OrderSpec spec;
  uint64_t rank = 0;
  std::vector<std::string> errors;
  BuildOrderSpec(given, &spec, &rank, &errors);
  if (!errors.empty()) {
    std::string msg;
    for (const std::string& e : errors) msg += (msg.empty() ? "" : "\n") + e;
    return Status::InvalidArgument(msg);
  }
  return spec;
}

}  // namespace clairfs::prefetch
