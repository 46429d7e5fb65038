// The order file: round trip, every parse error with its line, the writer's
// refusals, and the sampler that replays it.
#include "prefetch/order/order_file.hpp"

#include <catch2/catch.hpp>

#include "prefetch/order/order_file_sampler.hpp"
#include "tests/support/temp_dir.hpp"

namespace pf = clairfs::prefetch;
using Paths = std::vector<std::string>;

namespace {
pf::OrderFile Sample() {
  pf::OrderFile f;
  f.world_size = 2;
  f.sections[{0, 0}].paths = {"a/1.jpg", "b/ with space .jpg"};
  f.sections[{0, 1}].paths = {"b/2.jpg"};
  f.sections[{1, 0}].paths = {"b/2.jpg", "a/1.jpg"};
  return f;
}

std::string ErrorOf(const std::string& text) {
  auto r = pf::ParseOrderFile(text, "f");
  REQUIRE_FALSE(r.ok());
  return r.status().message();
}
}  // namespace

TEST_CASE("order file round trip through text and disk", "[unit][prefetch]") {
  std::string text = pf::FormatOrderFile(Sample()).value();
  CHECK(text.rfind("# clairfs-order v1\n# entries paths\n# world-size 2\n# epoch 0 rank 0\n", 0) ==
        0);
  auto back = pf::ParseOrderFile(text, "mem");
  REQUIRE(back.ok());
  CHECK(back->sections.at({0, 0}).paths == Paths{"a/1.jpg", "b/ with space .jpg"});
  CHECK(back->EffectiveWorldSize() == 2);
  CHECK(back->EpochsOf(0) == std::vector<uint64_t>{0, 1});

  pf::testing::TempDir t;
  std::string file = t.path() + "/order.txt";
  REQUIRE(pf::WriteOrderFile(file, Sample()).ok());
  auto read = pf::ReadOrderFile(file);
  REQUIRE(read.ok());
  CHECK(read->sections.at({1, 0}).paths == Paths{"b/2.jpg", "a/1.jpg"});
}

TEST_CASE("an index file declares what its indices count in", "[unit][prefetch]") {
  pf::OrderFile f;
  f.entries = pf::OrderFile::Entries::kIndices;
  f.layout = "list";
  f.sections[{0, 0}].indices = {1, 0};
  std::string text = pf::FormatOrderFile(f).value();
  CHECK(text.rfind("# clairfs-order v1\n# entries indices\n# layout list\n", 0) == 0);
  CHECK(pf::ParseOrderFile(text, "mem")->layout == "list");
  CHECK(pf::ParseOrderFile("# clairfs-order v1\n", "mem")->layout.empty());
  f.layout = "folder";
  CHECK_FALSE(pf::FormatOrderFile(f).ok());
}

TEST_CASE("order file parse errors name the line", "[unit][prefetch]") {
  CHECK(ErrorOf("epoch 0 rank 0\n") == "f:1: the first line must be '# clairfs-order v1'");
  CHECK(ErrorOf("# clairfs-order v1\na.jpg\n") ==
        "f:2: entry before the first '# epoch E rank R' line");
  CHECK(ErrorOf("# clairfs-order v1\n# epoch x rank 0\n").rfind("f:2:", 0) == 0);
  CHECK(ErrorOf("# clairfs-order v1\n# epoch 0 rank 0\n# epoch 0 rank 0\n").rfind("f:3:", 0) == 0);
  CHECK(ErrorOf("# clairfs-order v1\n# world-size 2\n# epoch 0 rank 2\n").rfind("f:3:", 0) == 0);
  CHECK(
      ErrorOf("# clairfs-order v1\n# entries indices\n# epoch 0 rank 0\n1\nx\n").rfind("f:5:", 0) ==
      0);
  CHECK(ErrorOf("# clairfs-order v1\n# epoch 0 rank 0\n# entries indices\n").rfind("f:3:", 0) == 0);
  CHECK(ErrorOf("# clairfs-order v1\n# entries words\n").rfind("f:2:", 0) == 0);
  CHECK(ErrorOf("# clairfs-order v1\n# layout folder\n") ==
        "f:2: expected '# layout image-folder' or '# layout list'");
  CHECK(ErrorOf("# clairfs-order v1\n# epoch 0 rank 0\n# layout list\n").rfind("f:3:", 0) == 0);
  auto st = pf::ParseOrderFile("", "f");
  CHECK(st.status().code() == clairfs::Code::kCorruption);
}

TEST_CASE("order file comments, blank lines and CRLF directives", "[unit][prefetch]") {
  auto r = pf::ParseOrderFile(
      "# clairfs-order v1\r\n# made by hand\n#\n# epoch 3 rank 0\r\n\na.jpg\n# note\nb.jpg", "f");
  REQUIRE(r.ok());
  CHECK(r->sections.at({3, 0}).paths == Paths{"a.jpg", "b.jpg"});
}

TEST_CASE("order file writer refuses unrepresentable paths", "[unit][prefetch]") {
  for (const char* bad : {"#a.jpg", "a\nb.jpg", ""}) {
    pf::OrderFile f;
    f.sections[{0, 0}].paths = {bad};
    auto r = pf::FormatOrderFile(f);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message().find("epoch 0 rank 0") != std::string::npos);
  }
}

TEST_CASE("order file sampler maps paths and indices", "[unit][prefetch]") {
  auto own = pf::OrderFileSampler::Create(Sample(), nullptr);
  REQUIRE(own.ok());
  CHECK(own->own_index().paths == Paths{"a/1.jpg", "b/ with space .jpg", "b/2.jpg"});
  CHECK(own->Order(0, 1).value() == std::vector<pf::Index>{2, 0});
  CHECK(own->Order(1, 1).status().IsNotFound());
  CHECK_FALSE(own->Order(2, 0).ok());

  pf::DatasetIndex ds;
  ds.paths = {"b/2.jpg", "a/1.jpg", "b/ with space .jpg"};
  auto mapped = pf::OrderFileSampler::Create(Sample(), &ds);
  REQUIRE(mapped.ok());
  CHECK(mapped->Order(0, 0).value() == std::vector<pf::Index>{1, 2});
  ds.paths.pop_back();
  CHECK(pf::OrderFileSampler::Create(Sample(), &ds).status().IsNotFound());

  pf::OrderFile idx;
  idx.entries = pf::OrderFile::Entries::kIndices;
  idx.sections[{0, 0}].indices = {2, 0};
  CHECK(pf::OrderFileSampler::Create(idx, nullptr)->dataset_size() == 3);
  ds.paths = {"x"};
  CHECK_FALSE(pf::OrderFileSampler::Create(idx, &ds).ok());
}
