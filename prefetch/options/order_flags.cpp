#include "prefetch/options/order_flags.hpp"

#include <map>

#include "base/cli.hpp"
#include "prefetch/options/sampler_settings.hpp"
#include "prefetch/options/sampler_settings_rows.hpp"

namespace clairfs::prefetch {

Result<OrderFlags> ParseFlags(const std::vector<std::string>& args) {
  OrderFlags f;
  CLI::App app("clairfs-order", "clairfs-order");
  app.allow_extras();  // reported below with the rest
  // Every sampler setting, as text: the table parses it (once) and names it.
  std::map<std::string, bool> switches;
  std::map<std::string, CLI::Option*> valued;
  for (const SamplerSetting& s : SamplerSettingTable()) {
    if (s.is_switch) {
      app.add_flag("--" + std::string(s.name), switches[s.name], s.help);
    } else {
      valued[s.name] = cli::AddValue(app, "--" + std::string(s.name))->description(s.help);
    }
  }
  CLI::Option* root = cli::AddValue(app, "--root");
  CLI::Option* listing = cli::AddValue(app, "--listing");
  CLI::Option* epochs = cli::AddValue(app, "--epochs");
  CLI::Option* epoch = cli::AddValue(app, "--epoch");
  CLI::Option* rank = cli::AddValue(app, "--rank");
  app.add_flag("--indices", f.print_indices);
  app.add_flag("--batches", f.print_batches);
  Status st = cli::Parse(app, args, &f.help);
  if (!st.ok()) return st;
  if (f.help) return f;

  std::vector<std::string> errors;
  for (const std::string& a : app.remaining()) errors.push_back("unknown argument '" + a + "'");
  for (std::string& e : cli::ValueProblems(app)) errors.push_back(std::move(e));
  auto u64 = [&](const char* flag, const CLI::Option* option, uint64_t min, uint64_t* out) {
    const std::string text = cli::Value(*option);
    if (!ParseU64Text(text, *out) || *out < min) {
      errors.push_back(std::string(flag) + ": '" + text +
                       "' is not an integer >= " + std::to_string(min));
    }
  };
  GivenSettings settings;
  for (const auto& [name, option] : valued) {
    if (cli::HasValue(*option)) settings.values[name] = cli::Value(*option);
  }
  for (const auto& [name, on] : switches) {
    if (on) settings.values[name] = "";
  }
  settings.rank_given = cli::HasValue(*rank);
  if (settings.rank_given) u64("--rank", rank, 0, &f.rank);
  BuildOrderSpec(settings, &f.spec, &f.rank, &errors);

  const SamplerKind kind = f.spec.kind;
  f.root = cli::Value(*root);
  f.listing = cli::Value(*listing);
  if (cli::HasValue(*root) && cli::HasValue(*listing))
    errors.push_back("give --root or --listing, not both");
  if (kind != SamplerKind::kOrderFile && !cli::HasValue(*root) && !cli::HasValue(*listing)) {
    errors.push_back("--root DIR or --listing FILE is required");
  }
  f.epochs_given = cli::HasValue(*epochs);
  if (f.epochs_given) u64("--epochs", epochs, 1, &f.epochs);
  if (cli::HasValue(*epoch)) {
    uint64_t e = 0;
    u64("--epoch", epoch, 0, &e);
    f.epoch = e;
    if (f.epochs_given) errors.push_back("give --epochs or --epoch, not both");
  }
  if (f.print_batches && kind != SamplerKind::kKerasFlow) {
    errors.push_back("--batches applies to --sampler keras-flow");
  }
  if (!errors.empty()) {
    std::string msg;
    for (const std::string& e : errors) msg += (msg.empty() ? "" : "\n") + e;
    return Status::InvalidArgument(msg);
  }
  return f;
}

}  // namespace clairfs::prefetch
