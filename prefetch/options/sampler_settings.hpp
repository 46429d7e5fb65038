// The sampler settings: one table of every setting a sampler takes - its
// name, a line of help, which samplers use it and how its text sets the
// OrderSpec - read by both callers: clairfs-order's command line (--NAME
// VALUE, a switch as --NAME; prefetch/options/order_flags.hpp) and the
// daemon's prefetch_NAME config keys (fs/clairfsd/prefetch_setup.hpp; dashes
// as underscores, a switch as true/false, the switch --no-X as prefetch_X:
// false). The tf.data rows live in sampler_settings_tf.cpp, the Keras rows
// in sampler_settings_keras.cpp.
//
// BuildOrderSpec parses each given setting once, then checks them together:
// every problem (a malformed value, a setting the chosen sampler does not
// use, a required setting missing, settings that contradict each other) is
// collected and named the caller's way (--seed or prefetch_seed) in one
// InvalidArgument. Pure; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.hpp"
#include "prefetch/options/read_order.hpp"

namespace clairfs::prefetch {

// How the caller names settings in errors.
enum class SettingNames {
  kFlags,  // clairfs-order: --seed, --no-shuffle
  kKeys,   // the daemon: prefetch_seed, prefetch_shuffle
};

// The caller's name of a setting: "--seed" or "prefetch_seed" (and
// "prefetch_shuffle" for "no-shuffle").
std::string SettingName(std::string_view setting, SettingNames names);

// The settings one caller gave, by table name ("seed", "no-shuffle"); a
// switch is present only when on (its value is ignored). `rank_given`:
// clairfs-order's --rank was given (the daemon has none).
struct GivenSettings {
  SettingNames names = SettingNames::kFlags;
  std::map<std::string, std::string> values;
  bool rank_given = false;
  // The job's training ranks and batch size, when the caller has them as
  // settings of its own (the daemon's prefetch_world_size and
  // prefetch_batch_size): used by the samplers that take a world size or a
  // batch size, unless world-size / batch-size are given.
  std::optional<uint64_t> job_world_size;
  std::optional<uint64_t> job_batch_size;
};

// What a row's setter works on: the spec being built, the rank (--shard-index
// sets it), the settings given and the errors so far.
class SettingContext {
 public:
  SettingContext(const GivenSettings& given, OrderSpec* spec, uint64_t* rank,
                 std::vector<std::string>* errors)
      : given_(given), spec_(*spec), rank_(*rank), errors_(*errors) {}

  OrderSpec& spec() { return spec_; }
  uint64_t& rank() { return rank_; }
  bool rank_given() const { return given_.rank_given; }
  SamplerKind kind() const { return spec_.kind; }
  std::string Name(std::string_view setting) const { return SettingName(setting, given_.names); }
  // The value given for `setting`, or nullptr.
  const std::string* Value(std::string_view setting) const;
  bool Has(std::string_view setting) const { return Value(setting) != nullptr; }
  void Error(std::string message) { errors_.push_back(std::move(message)); }
  // `text` as a decimal integer >= min into *out; otherwise an error naming
  // `setting` ("--epochs: 'x' is not an integer >= 1") and false.
  bool U64(std::string_view setting, const std::string& text, uint64_t min, uint64_t* out);
  // The sampler's name, for "does not apply to --sampler KIND".
  std::string KindText() const;

 private:
  const GivenSettings& given_;
  OrderSpec& spec_;
  uint64_t& rank_;
  std::vector<std::string>& errors_;
};

struct SamplerSetting {
  const char* name;  // clairfs-order's flag without "--": "seed", "no-shuffle"
  bool is_switch;    // takes no value (the daemon: true or false)
  const char* help;  // one line
  bool (*applies)(SamplerKind kind);
  // Parses `value` into ctx.spec() (called only when given and applying);
  // appends what is wrong with it to the errors.
  void (*set)(SettingContext& ctx, const std::string& value);
};

// Every setting; "sampler" first (the others depend on the kind it sets).
const std::vector<SamplerSetting>& SamplerSettingTable();
// The row named `name` ("seed"), or nullptr.
const SamplerSetting* FindSamplerSetting(std::string_view name);

// One line per setting but those named in `except`, named the caller's way,
// with its help and the samplers that use it: "  prefetch_seed  the
// sampler's or shuffle's seed (torch-distributed, keras, ...)"; a switch
// shows the value that turns it on ("prefetch_shuffle: false"). The daemon's
// --help lists them.
std::string SamplerSettingsHelp(SettingNames names, const std::vector<std::string>& except = {});

// Sets *spec (from its defaults) from the given settings, appending every
// problem to *errors; spec->kind is set even when there are problems.
// *rank: clairfs-order's rank in, set by --shard-index.
void BuildOrderSpec(const GivenSettings& given, OrderSpec* spec, uint64_t* rank,
                    std::vector<std::string>* errors);
// The same for a caller without a rank; InvalidArgument listing every
// problem, one per line.
Result<OrderSpec> BuildOrderSpec(const GivenSettings& given);

}  // namespace clairfs::prefetch
