// The prefetch keys of the daemon's config: parsing, defaults, the checks
// that concern several keys, and that the sampler's settings go through the
// same table as clairfs-order's options (same samplers, same values, same
// orders).
#include <catch2/catch.hpp>

#include "fs/clairfsd/prefetch_setup.hpp"
#include "fs/config/config.hpp"
#include "fs/config/config_loader.hpp"
#include "prefetch/options/order_flags.hpp"
#include "prefetch/options/read_order.hpp"
#include "prefetch/order/order_file.hpp"
#include "tests/support/format_fixture.hpp"
#include "tests/support/temp_dir.hpp"

namespace clairfs::fs {
namespace {

namespace pf = clairfs::prefetch;

Config Load(const std::vector<std::string>& args) {
  std::vector<std::string> all = {"--dataset", "d", "--mount", "m"};
  all.insert(all.end(), args.begin(), args.end());
  auto cl = LoadCommandLine(all);
  REQUIRE(cl.ok());
  return cl->config;
}

TEST_CASE("prefetch keys parse from the command line and read back", "[prefetch_config]") {
  const Config c = Load({"--prefetch-sampler", "torch-distributed", "--prefetch-root", "train",
                         "--prefetch-seed", "5", "--prefetch-world-size", "8",
                         "--prefetch-ranks-per-node", "4", "--prefetch-torch-version", "2.7.1"});
  CHECK(c.prefetch_sampler == "torch-distributed");
  CHECK(c.prefetch_root == "train");
  CHECK(c.prefetch_world_size == 8);
  CHECK(c.prefetch_ranks_per_node == 4);
  CHECK(c.prefetch_epochs == 1);  // defaults
  CHECK(c.prefetch_factor == 2);
  CHECK(c.prefetch_engine.threads == 2);
  auto spec = OrderSpecFromConfig(c);
  REQUIRE(spec.ok());
  CHECK(spec->distributed.seed == 5);
  CHECK(spec->distributed.num_replicas == 8);  // the job's world size
  CHECK(spec->distributed.torch_version.ToString() == "2.7");
  const std::string text = DescribeConfig(c);
  CHECK(text.find("prefetch_sampler: torch-distributed\n") != std::string::npos);
  CHECK(text.find("prefetch_root: \"train\"\n") != std::string::npos);
  CHECK(text.find("prefetch_seed: \"5\"\n") != std::string::npos);
}

TEST_CASE("the default is no prefetch and needs nothing else", "[prefetch_config]") {
  Config c;
  c.cluster.dataset = "d";
  c.fuse.mount = "m";
  CHECK(c.prefetch_sampler == "none");
  CHECK(ValidateConfig(c).empty());
}

TEST_CASE("bad prefetch values are rejected", "[prefetch_config]") {
  Config c;
  CHECK_FALSE(SetConfigValue(&c, "prefetch_epochs", "0").ok());
  CHECK_FALSE(SetConfigValue(&c, "prefetch_world_size", "-1").ok());
  CHECK_FALSE(SetConfigValue(&c, "prefetch_batch_size", "0").ok());
  CHECK_FALSE(SetConfigValue(&c, "prefetch_threads", "0").ok());
  CHECK_FALSE(SetConfigValue(&c, "prefetch_shared_stream", "maybe").ok());
  // A key that was folded into another names its replacement.
  Status gone = SetConfigValue(&c, "prefetch_budget", "2G");
  CHECK(gone.message().find("set ram_cache instead") != std::string::npos);
  auto check = [](std::vector<std::string> args, const std::string& want) {
    auto spec = OrderSpecFromConfig(Load(args));
    REQUIRE_FALSE(spec.ok());
    INFO(spec.status().message());
    CHECK(spec.status().message().find(want) != std::string::npos);
  };
  check({"--prefetch-sampler", "torch"}, "unknown sampler 'torch'");
  check(
      {"--prefetch-sampler", "keras", "--prefetch-seed", "1", "--prefetch-keras-version", "three"},
      "prefetch_keras_version:");
  check({"--prefetch-sampler", "torch-distributed", "--prefetch-torch-version", "1."},
        "prefetch_torch_version:");
  check({"--prefetch-sampler", "torch-random", "--prefetch-seed", "3"},
        "prefetch_seed does not apply to prefetch_sampler torch-random");
  check({"--prefetch-sampler", "torch-distributed", "--prefetch-sede", "3"},
        "prefetch_sede: unknown key");
  check({"--prefetch-sampler", "torch-distributed", "--prefetch-drop-last", "sometimes"},
        "prefetch_drop_last: 'sometimes' is not true or false");
  check({"--prefetch-sampler", "order-file"}, "prefetch_order_file");
  check({"--prefetch-sampler", "keras"}, "prefetch_seed is required");
  check({"--prefetch-sampler", "torch-distributed", "--prefetch-sampler-kind", "x"},
        "prefetch_sampler_kind: unknown key");
}

TEST_CASE("a --no-X switch is the key X: false, or the key no_X: true", "[prefetch_config]") {
  for (auto args : {std::vector<std::string>{"--prefetch-shuffle", "false"},
                    std::vector<std::string>{"--prefetch-no-shuffle", "true"}}) {
    args.insert(args.begin(), {"--prefetch-sampler", "torch-distributed"});
    auto spec = OrderSpecFromConfig(Load(args));
    REQUIRE(spec.ok());
    CHECK_FALSE(spec->distributed.shuffle);
  }
  for (auto args : {std::vector<std::string>{"--prefetch-shuffle", "true"},
                    std::vector<std::string>{"--prefetch-no-shuffle", "false"}}) {
    args.insert(args.begin(), {"--prefetch-sampler", "torch-distributed"});
    auto spec = OrderSpecFromConfig(Load(args));
    REQUIRE(spec.ok());
    CHECK(spec->distributed.shuffle);
  }
}

TEST_CASE("every sampler clairfs-order knows, with its values, configures the daemon",
          "[prefetch_config]") {
  // Each row: clairfs-order's options and the same settings as config keys.
  // Both go through one parser; the orders they give must be the same.
  struct Row {
    std::vector<std::string> order_flags;
    std::vector<std::string> daemon_args;
  };
  const std::vector<Row> rows = {
      {{"--sampler", "torch-distributed", "--seed", "-3", "--world-size", "2", "--drop-last"},
       {"--prefetch-sampler", "torch-distributed", "--prefetch-seed", "-3", "--prefetch-world-size",
        "2", "--prefetch-drop-last", "true"}},
      {{"--sampler", "torch-sequential"}, {"--prefetch-sampler", "torch-sequential"}},
      {{"--sampler", "torch-distributed", "--no-shuffle", "--layout", "list"},
       {"--prefetch-sampler", "torch-distributed", "--prefetch-shuffle", "false",
        "--prefetch-layout", "list"}},
      {{"--sampler", "torch-random", "--generator-seed", "9", "--loader-generator", "every-epoch"},
       {"--prefetch-sampler", "torch-random", "--prefetch-generator-seed", "9",
        "--prefetch-loader-generator", "every-epoch"}},
      {{"--sampler", "keras", "--seed", "7", "--keras-version", "2.15", "--batch-size", "4"},
       {"--prefetch-sampler", "keras", "--prefetch-seed", "7", "--prefetch-keras-version", "2.15",
        "--prefetch-batch-size", "4"}},
      {{"--sampler", "keras", "--seed", "7", "--keras-version", "3.15", "--batch-size", "4",
        "--global-seed", "11"},
       {"--prefetch-sampler", "keras", "--prefetch-seed", "7", "--prefetch-keras-version", "3.15",
        "--prefetch-batch-size", "4", "--prefetch-global-seed", "11"}},
      {{"--sampler", "keras-flow", "--seed", "3", "--batch-size", "4", "--augment",
        "horizontal_flip=1,rotation_range=10", "--protocol", "fit", "--fit-shuffle", "off"},
       {"--prefetch-sampler", "keras-flow", "--prefetch-seed", "3", "--prefetch-batch-size", "4",
        "--prefetch-augment", "horizontal_flip=1,rotation_range=10", "--prefetch-protocol", "fit",
        "--prefetch-fit-shuffle", "off"}},
      {{"--sampler", "keras-flow", "--seed", "3", "--batch-size", "4", "--protocol", "fit",
        "--fit-shuffle", "off", "--steps-per-epoch", "6", "--keras-version", "2.15"},
       {"--prefetch-sampler", "keras-flow", "--prefetch-seed", "3", "--prefetch-batch-size", "4",
        "--prefetch-protocol", "fit", "--prefetch-fit-shuffle", "off", "--prefetch-steps-per-epoch",
        "6", "--prefetch-keras-version", "2.15"}},
      {{"--sampler", "tf-list-files", "--glob", "*/*.jpg", "--seed", "5", "--batch-size", "2"},
       {"--prefetch-sampler", "tf-list-files", "--prefetch-glob", "*/*.jpg", "--prefetch-seed", "5",
        "--prefetch-batch-size", "2"}},
  };
  pf::Listing listing;
  for (int c = 0; c < 3; ++c) {
    for (int i = 0; i < 7; ++i) {
      listing.files.push_back("class" + std::to_string(c) + "/img" + std::to_string(i) + ".jpg");
    }
  }
  for (const Row& row : rows) {
    INFO(row.order_flags[1]);
    std::vector<std::string> tool = row.order_flags;
    tool.insert(tool.end(), {"--listing", "unused"});
    auto flags = pf::ParseFlags(tool);
    REQUIRE(flags.ok());
    auto spec = OrderSpecFromConfig(Load(row.daemon_args));
    INFO(spec.status().message());
    REQUIRE(spec.ok());
    auto a = pf::ReadOrder::Build(flags->spec, &listing);
    auto b = pf::ReadOrder::Build(*spec, &listing);
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    for (uint64_t epoch = 0; epoch < 3; ++epoch) {
      CHECK(a->Paths(0, epoch).value() == b->Paths(0, epoch).value());
    }
  }
}

TEST_CASE("prefetch checks across keys are reported together", "[prefetch_config]") {
  Config c;
  c.cluster.dataset = "d";
  c.fuse.mount = "m";
  c.prefetch_sampler = "order-file";
  c.prefetch_root = "../up";
  c.prefetch_world_size = 2;
  c.prefetch_ranks_per_node = 4;
  const auto errors = ValidateConfig(c);
  REQUIRE(errors.size() == 2);
  CHECK(errors[0].find("prefetch_root") != std::string::npos);
  CHECK(errors[1].find("prefetch_ranks_per_node") != std::string::npos);
  c.prefetch_sampler = "torch-random";
  c.prefetch_root = "train";
  c.prefetch_ranks_per_node = 0;
  const auto random = ValidateConfig(c);
  REQUIRE(random.size() == 1);
  CHECK(random[0].find("torch-random") != std::string::npos);
}

// A tree whose walk order and sorted order differ ("a-b/x.npz" < "a/z.npz" by
// bytes, directory "a" before "a-b" in a walk), with files no ImageFolder takes.
std::shared_ptr<const format::Manifest> WalkManifest(const std::vector<std::string>& paths,
                                                     bool empty_dir = true) {
  namespace ft = clairfs::format::testing;
  ft::DatasetSpec spec;
  for (const std::string& p : paths) spec.files.push_back({p, ft::TextBytes(10, 1), 0});
  if (empty_dir) spec.empty_dirs = {"empty"};
  auto ds = ft::BuildDataset(spec);
  REQUIRE(ds.ok());
  auto m = format::Manifest::Parse(ds->manifest, "test manifest");
  REQUIRE(m.ok());
  return *m;
}

const std::vector<std::string> kWalkTree = {"a.txt",     "a/z.npz", "a/b/c.npz",
                                            "a-b/x.npz", "B/y.npz", "z.npz"};

TEST_CASE("the daemon lists its manifest in clairfs-order's walk order", "[prefetch_config]") {
  auto manifest = WalkManifest(kWalkTree);
  pf::testing::TempDir t;
  for (const std::string& p : kWalkTree) t.Touch(p);
  t.MakeDir("empty");
  auto scanned = pf::ScanDirectory(t.path());
  auto listed = ListingFromManifest(*manifest, *manifest->Resolve(""));
  REQUIRE((scanned.ok() && listed.ok()));
  CHECK(listed->files == scanned->files);
  CHECK(listed->files ==
        std::vector<std::string>{"B/y.npz", "a/b/c.npz", "a/z.npz", "a-b/x.npz", "a.txt", "z.npz"});
  CHECK(listed->directories == std::vector<std::string>{"empty"});
}

TEST_CASE("an order file needs no other setting, or is refused naming the key",
          "[prefetch_config]") {
  auto manifest = WalkManifest(kWalkTree);
  pf::testing::TempDir t;
  Config c;
  c.prefetch_sampler = "order-file";
  c.prefetch_settings = {{"order_file", t.path() + "/o"}};
  c.prefetch_world_size = 1;
  auto write = [&](const pf::OrderFile& f) {
    REQUIRE(pf::WriteOrderFile(t.path() + "/o", f).ok());
  };
  // Paths of files no ImageFolder would take (DLIO's npz files): predicted as they are.
  pf::OrderFile paths;
  paths.sections[{0, 0}].paths = {"z.npz", "a/b/c.npz"};
  write(paths);
  auto job = BuildPrefetchJob(c, *manifest, 0, 1);
  INFO((job.ok() ? "" : job.status().ToString()));
  REQUIRE(job.ok());
  CHECK(job->config.enabled);
  CHECK(job->missing_files == 0);
  CHECK(PredictedFiles(*job)(0, 0).value() ==
        std::vector<uint32_t>{*manifest->Resolve("z.npz"), *manifest->Resolve("a/b/c.npz")});
  // ...unless the layout says otherwise: refused, naming the key.
  c.prefetch_settings.emplace_back("layout", "image-folder");
  auto refused = BuildPrefetchJob(c, *manifest, 0, 1);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message().find("prefetch_layout image-folder") != std::string::npos);
  c.prefetch_settings.pop_back();
  // Indices: counted in the walk (no image-folder sample exists here).
  pf::OrderFile indices;
  indices.entries = pf::OrderFile::Entries::kIndices;
  indices.sections[{0, 0}].indices = {5, 2};
  write(indices);
  auto listed = BuildPrefetchJob(c, *manifest, 0, 1);
  REQUIRE(listed.ok());
  CHECK(PredictedFiles(*listed)(0, 0).value() ==
        std::vector<uint32_t>{*manifest->Resolve("z.npz"), *manifest->Resolve("a/z.npz")});
}

TEST_CASE("the node that reads each file first, by the settings' first epoch",
          "[prefetch_config]") {
  std::vector<std::string> tree;
  for (int i = 0; i < 40; ++i)
    tree.push_back("c" + std::to_string(i % 3) + "/f" + std::to_string(i) + ".jpg");
  auto manifest = WalkManifest(tree, /*empty_dir=*/false);
  Config c;
  c.prefetch_sampler = "torch-distributed";
  c.prefetch_settings = {{"seed", "3"}};
  c.prefetch_world_size = 4;  // 2 ranks on each of 2 nodes
  c.prefetch_start_epoch = 1;
  auto first = FirstReaders(c, *manifest, 2);
  INFO((first.ok() ? "" : first.status().ToString()));
  REQUIRE(first.ok());
  // Against each rank's own order: the earliest step, a tie to the lower node.
  auto job = BuildPrefetchJob(c, *manifest, 0, 2);
  REQUIRE(job.ok());
  std::vector<std::pair<uint64_t, int>> want(manifest->node_count(), {UINT64_MAX, -1});
  for (uint64_t r = 0; r < 4; ++r) {
    auto files = PredictedFiles(*job)(r, 1);
    REQUIRE(files.ok());
    for (uint64_t i = 0; i < files->size(); ++i) {
      auto& w = want[(*files)[i]];
      w = std::min(w, std::pair<uint64_t, int>{i, static_cast<int>(r / 2)});
    }
  }
  int read = 0;
  for (uint32_t f = 0; f < manifest->node_count(); ++f) {
    CHECK(first->node[f] == want[f].second);
    CHECK(first->step[f] == want[f].first);
    read += first->node[f] >= 0 ? 1 : 0;
  }
  CHECK(read == 40);
  // A shared stream (one order for every process) has no first reader.
  c.prefetch_world_size = 1;
  CHECK_FALSE(FirstReaders(c, *manifest, 2).ok());
}

}  // namespace
}  // namespace clairfs::fs
