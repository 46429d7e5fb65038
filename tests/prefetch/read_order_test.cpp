// ReadOrder (the prefetcher's entry point), the loader-worker helpers and the
// clairfs-order flag parser.
#include "prefetch/options/read_order.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <optional>
#include <set>

#include "prefetch/options/order_flags.hpp"
#include "prefetch/options/sampler_settings.hpp"
#include "prefetch/order/loader_workers.hpp"
#include "prefetch/order/order_file.hpp"
#include "tests/support/temp_dir.hpp"

namespace pf = clairfs::prefetch;
using Paths = std::vector<std::string>;

namespace {
pf::Listing Tree() {
  return pf::ListingFromPaths({"cat/1.jpg", "cat/2.jpg", "dog/3.jpg", "dog/4.png", "dog/5.jpg"})
      .value();
}

clairfs::Result<clairfs::prefetch::OrderFlags> Parse(std::vector<std::string> args) {
  return clairfs::prefetch::ParseFlags(args);
}
}  // namespace

TEST_CASE("ReadOrder builds a DistributedSampler over ImageFolder", "[unit][prefetch]") {
  pf::OrderSpec spec;
  spec.distributed.num_replicas = 2;
  spec.distributed.seed = 4;
  pf::Listing listing = Tree();
  auto order = pf::ReadOrder::Build(spec, &listing);
  REQUIRE(order.ok());
  CHECK(order->window() == 1);
  CHECK(order->dataset().size() == 5);
  Paths r0 = order->Paths(0, 1).value();
  Paths r1 = order->Paths(1, 1).value();
  CHECK(r0.size() == 3);
  CHECK(r1.size() == 3);
  auto direct = pf::DistributedSampler::Create(5, spec.distributed)->Order(1, 1).value();
  for (size_t i = 0; i < direct.size(); ++i) CHECK(r1[i] == order->dataset().paths[direct[i]]);
}

TEST_CASE("ReadOrder for list layout, sequential, Keras and errors", "[unit][prefetch]") {
  pf::Listing listing = Tree();
  pf::OrderSpec spec;
  spec.kind = pf::SamplerKind::kTorchSequential;
  spec.layout = pf::DatasetLayout::kListOrder;
  listing.files = {"dog/5.jpg", "cat/1.jpg"};
  CHECK(pf::ReadOrder::Build(spec, &listing)->Paths(0, 0).value() == listing.files);

  listing = Tree();
  spec.kind = pf::SamplerKind::kKeras;
  spec.keras.version = {3, 3};
  spec.keras.batch_size = 2;
  auto keras = pf::ReadOrder::Build(spec, &listing);
  REQUIRE(keras.ok());
  CHECK(keras->window() == 1);  // the tf.data shuffle of the paths is modelled exactly
  std::vector<std::string> e0 = keras->Paths(0, 0).value(), e5 = keras->Paths(0, 5).value();
  std::sort(e0.begin(), e0.end());
  std::sort(e5.begin(), e5.end());
  CHECK(e0 == e5);  // every epoch opens the same files (tests/tf checks the order)

  spec.kind = pf::SamplerKind::kTorchDistributed;
  CHECK_FALSE(pf::ReadOrder::Build(spec, nullptr).ok());
  spec.kind = pf::SamplerKind::kOrderFile;
  spec.order_file = "/nonexistent/order";
  CHECK_FALSE(pf::ReadOrder::Build(spec, nullptr).ok());
}

TEST_CASE("ReadOrder replays an order file against a listing", "[unit][prefetch]") {
  pf::testing::TempDir t;
  pf::OrderFile f;
  f.sections[{2, 0}].paths = {"dog/4.png", "cat/1.jpg"};
  std::string file = t.path() + "/o";
  REQUIRE(pf::WriteOrderFile(file, f).ok());
  pf::OrderSpec spec;
  spec.kind = pf::SamplerKind::kOrderFile;
  spec.order_file = file;
  spec.layout_given = true;  // the paths' indices are the ImageFolder's
  pf::Listing listing = Tree();
  auto order = pf::ReadOrder::Build(spec, &listing);
  REQUIRE(order.ok());
  CHECK(order->sampler().Order(0, 2).value() == std::vector<pf::Index>{3, 0});
  CHECK(order->order_file_epochs(0) == std::vector<uint64_t>{2});
  CHECK(order->Paths(0, 2).value() == Paths{"dog/4.png", "cat/1.jpg"});
}

TEST_CASE("an order file's layout is inferred from its entries, or refused naming the key",
          "[unit][prefetch]") {
  pf::testing::TempDir t;
  auto build = [&](const pf::OrderFile& f, const pf::Listing& listing,
                   std::optional<pf::DatasetLayout> layout = std::nullopt) {
    std::string file = t.path() + "/o";
    REQUIRE(pf::WriteOrderFile(file, f).ok());
    pf::GivenSettings given;
    given.names = pf::SettingNames::kKeys;
    given.values = {{"sampler", "order-file"}, {"order-file", file}};
    if (layout)
      given.values["layout"] = *layout == pf::DatasetLayout::kListOrder ? "list" : "image-folder";
    return pf::ReadOrder::Build(pf::BuildOrderSpec(given).value(), &listing);
  };
  // Files no ImageFolder takes (DLIO's npz files in one directory, a file at
  // the root): a path file needs no layout; its paths are the dataset.
  pf::Listing npz = pf::ListingFromPaths({"train/a.npz", "train/b.npz", "README"}).value();
  pf::OrderFile paths;
  paths.sections[{0, 0}].paths = {"train/b.npz", "README"};
  auto inferred = build(paths, npz);
  REQUIRE(inferred.ok());
  CHECK(inferred->Paths(0, 0).value() == Paths{"train/b.npz", "README"});
  // Given explicitly, image-folder is refused with the key named.
  auto refused = build(paths, npz, pf::DatasetLayout::kImageFolder);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message().find("prefetch_layout image-folder") != std::string::npos);
  CHECK(build(paths, npz, pf::DatasetLayout::kListOrder).ok());

  // Indices: the layout they fit. No image-folder samples here: the list.
  pf::OrderFile indices;
  indices.entries = pf::OrderFile::Entries::kIndices;
  indices.sections[{0, 0}].indices = {2, 0};
  auto listed = build(indices, npz);
  REQUIRE(listed.ok());
  CHECK(listed->Paths(0, 0).value() == Paths{npz.files[2], npz.files[0]});
  // An ImageFolder tree whose file list orders the same: either reading agrees.
  pf::Listing tree = Tree();
  auto folder = build(indices, tree);
  REQUIRE(folder.ok());
  CHECK(folder->Paths(0, 0).value() == Paths{"dog/3.jpg", "cat/1.jpg"});
  // A root-level file the list takes and ImageFolder does not: index 5 fits
  // only the list (6 files against 5 samples)...
  pf::Listing extra = Tree();
  extra.files.insert(extra.files.begin(), "a.txt");
  indices.sections[{0, 0}].indices = {5, 0};
  auto past_folder = build(indices, extra);
  REQUIRE(past_folder.ok());
  CHECK(past_folder->Paths(0, 0).value() == Paths{"dog/5.jpg", "a.txt"});
  // ...while indices both fit, naming other files in each, are refused.
  indices.sections[{0, 0}].indices = {1, 0};
  auto ambiguous = build(indices, extra);
  REQUIRE_FALSE(ambiguous.ok());
  CHECK(ambiguous.status().message().find("set prefetch_layout to image-folder or list") !=
        std::string::npos);
  CHECK(build(indices, extra, pf::DatasetLayout::kImageFolder)->Paths(0, 0).value() ==
        Paths{"cat/2.jpg", "cat/1.jpg"});
  // A file that says what its indices count in needs no setting, and one
  // that disagrees with the setting is refused.
  indices.layout = "list";
  CHECK(build(indices, extra)->Paths(0, 0).value() == Paths{"cat/1.jpg", "a.txt"});
  auto conflict = build(indices, extra, pf::DatasetLayout::kImageFolder);
  REQUIRE_FALSE(conflict.ok());
  CHECK(conflict.status().message() ==
        "order file: it declares '# layout list', prefetch_layout says image-folder");
  indices.layout.clear();
  // Past every reading: the sizes of both in the message.
  indices.sections[{0, 0}].indices = {6};
  auto outside = build(indices, extra);
  REQUIRE_FALSE(outside.ok());
  CHECK(outside.status().message().find("index 6 is outside the dataset (6 files; 5 as "
                                        "image-folder samples)") != std::string::npos);
}

TEST_CASE("sampler kinds parse by name", "[unit][prefetch]") {
  for (auto kind :
       {pf::SamplerKind::kTorchDistributed, pf::SamplerKind::kTorchRandom,
        pf::SamplerKind::kTorchSequential, pf::SamplerKind::kKeras, pf::SamplerKind::kOrderFile}) {
    CHECK(pf::ParseSamplerKind(pf::SamplerKindName(kind)).value() == kind);
  }
  CHECK_FALSE(pf::ParseSamplerKind("tf").ok());
}

TEST_CASE("loader batches go round-robin to workers", "[unit][prefetch]") {
  pf::LoaderShape shape{4, 3, 2, false};
  CHECK(pf::BatchCount(10, shape) == 3);
  shape.drop_last = true;
  CHECK(pf::BatchCount(10, shape) == 2);
  CHECK(pf::WorkerOfBatch(4, shape) == 1);
  CHECK(pf::WorkerOfPosition(13, shape) == 0);  // batch 3
  CHECK(pf::BatchesInFlight(shape) == 6);
  shape.num_workers = 0;
  CHECK(pf::WorkerOfBatch(4, shape) == 0);
  CHECK(pf::BatchesInFlight(shape) == 0);
}

TEST_CASE("clairfs-order flags parse into an OrderSpec", "[unit][prefetch]") {
  auto f = Parse({"--root", "/d", "--seed", "-3", "--world-size=4", "--rank", "3", "--drop-last",
                  "--epoch", "7", "--torch-version", "2.7.1"});
  REQUIRE(f.ok());
  CHECK(f->spec.distributed.seed == static_cast<uint64_t>(-3));
  CHECK(f->spec.distributed.num_replicas == 4);
  CHECK(f->spec.distributed.drop_last);
  CHECK(f->epoch == 7u);
  CHECK(f->spec.distributed.torch_version == pf::TorchVersion{2, 7});

  auto r = Parse({"--sampler", "torch-random", "--listing", "l", "--generator-seed", "5",
                  "--loader-generator", "persistent"});
  REQUIRE(r.ok());
  CHECK(r->spec.random.loader_draw == pf::LoaderSeedDraw::kFirstEpoch);
  CHECK(Parse({"--help"})->help);
}

TEST_CASE("clairfs-order flags report every problem at once", "[unit][prefetch]") {
  auto f = Parse({"--root", "/d", "--rank", "2", "--world-size", "2", "--generator-seed", "1",
                  "--seed", "abc", "--frobnicate", "--epochs"});
  REQUIRE_FALSE(f.ok());
  const std::string& m = f.status().message();
  CHECK(m.find("unknown argument '--frobnicate'") != std::string::npos);
  CHECK(m.find("--epochs needs a value") != std::string::npos);
  CHECK(m.find("--generator-seed does not apply") != std::string::npos);
  CHECK(m.find("--seed: 'abc'") != std::string::npos);
  CHECK(m.find("--rank 2 is not below --world-size 2") != std::string::npos);
  CHECK_FALSE(Parse({"--sampler", "keras", "--root", "/d"}).ok());  // no seed
  CHECK_FALSE(Parse({"--sampler", "keras", "--root", "/d", "--seed", "4294967296"}).ok());
  CHECK_FALSE(Parse({"--sampler", "order-file"}).ok());
  CHECK_FALSE(Parse({"--seed", "1"}).ok());  // no dataset
}

TEST_CASE("one table of sampler settings, named as flags or as config keys", "[unit][prefetch]") {
  std::set<std::string> names;
  for (const pf::SamplerSetting& s : pf::SamplerSettingTable()) {
    INFO(s.name);
    CHECK(names.insert(s.name).second);  // each setting once
    CHECK(pf::FindSamplerSetting(s.name) == &s);
  }
  CHECK(std::string(pf::SamplerSettingTable().front().name) == "sampler");
  // The same problem, in each caller's words.
  for (auto [names_as, want] :
       {std::pair{pf::SettingNames::kFlags,
                  "--no-shuffle does not apply to --sampler torch-random"},
        {pf::SettingNames::kKeys,
         "prefetch_shuffle does not apply to prefetch_sampler torch-random"}}) {
    pf::GivenSettings given;
    given.names = names_as;
    given.values = {{"sampler", "torch-random"}, {"no-shuffle", ""}};
    auto spec = pf::BuildOrderSpec(given);
    REQUIRE_FALSE(spec.ok());
    CHECK(spec.status().message() == want);
  }
  // The job's world size and batch size reach the samplers that take them,
  // and only those; a setting given wins.
  pf::GivenSettings job;
  job.names = pf::SettingNames::kKeys;
  job.job_world_size = 8;
  job.job_batch_size = 4;
  job.values = {{"sampler", "torch-distributed"}};
  CHECK(pf::BuildOrderSpec(job)->distributed.num_replicas == 8);
  job.values = {{"sampler", "torch-random"}};
  CHECK(pf::BuildOrderSpec(job).ok());
  job.values = {{"sampler", "keras-flow"}, {"seed", "1"}};
  CHECK(pf::BuildOrderSpec(job)->keras_flow.batch_size == 4);
  job.values = {{"sampler", "tf-list-files"}, {"seed", "1"}, {"glob", "*"}, {"batch-size", "2"}};
  CHECK(pf::BuildOrderSpec(job)->tf.batch_size == 2);
  const std::string help = pf::SamplerSettingsHelp(pf::SettingNames::kKeys, {"sampler"});
  CHECK(help.find("prefetch_shuffle: false") != std::string::npos);
  CHECK(help.find("prefetch_sampler") == std::string::npos);
}
