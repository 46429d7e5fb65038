// Listings (in memory and scanned) and the torchvision ImageFolder index order.
#include "prefetch/order/listing.hpp"

#include <algorithm>
#include <catch2/catch.hpp>

#include "prefetch/torch/image_folder.hpp"
#include "tests/support/temp_dir.hpp"

namespace pf = clairfs::prefetch;
using Paths = std::vector<std::string>;

namespace {
pf::Listing FromPaths(const Paths& paths) {
  auto l = pf::ListingFromPaths(paths);
  REQUIRE(l.ok());
  return l.value();
}
}  // namespace

TEST_CASE("walk order sorts directories by full path, then names", "[unit][prefetch]") {
  pf::Listing l = FromPaths({"b/sub/deeper/d.jpg", "b/sub-2/c.jpg", "b/sub/b.jpg", "b/z.jpg",
                             "b/a.jpg", "a/x.jpg", "root.jpg"});
  auto groups = pf::GroupByTopDirectory(l);
  REQUIRE(groups.size() == 2);
  CHECK(groups[0].name == "a");
  CHECK(groups[1].files ==
        Paths{"b/a.jpg", "b/z.jpg", "b/sub/b.jpg", "b/sub-2/c.jpg", "b/sub/deeper/d.jpg"});
  CHECK(pf::FilesInWalkOrder(l) == Paths{"root.jpg", "a/x.jpg", "b/a.jpg", "b/z.jpg", "b/sub/b.jpg",
                                         "b/sub-2/c.jpg", "b/sub/deeper/d.jpg"});
}

TEST_CASE("walk order compares bytes, upper case before lower", "[unit][prefetch]") {
  pf::Listing l = FromPaths({"c/b.jpg", "c/B.jpg", "c/\xc3\xa9.jpg", "c/e.jpg"});
  CHECK(pf::GroupByTopDirectory(l)[0].files ==
        Paths{"c/B.jpg", "c/b.jpg", "c/e.jpg", "c/\xc3\xa9.jpg"});
}

TEST_CASE("ListingFromPaths validates and splits directories", "[unit][prefetch]") {
  auto l = FromPaths({"a/", "b/x.jpg"});
  CHECK(l.directories == Paths{"a"});
  CHECK(l.files == Paths{"b/x.jpg"});
  for (const char* bad : {"/abs.jpg", "a//b.jpg", "a/./b.jpg", "a/../b.jpg", "", "/"}) {
    INFO(bad);
    CHECK_FALSE(pf::ListingFromPaths({bad}).ok());
  }
}

TEST_CASE("ImageFolder keeps image extensions in any case and numbers classes",
          "[unit][prefetch]") {
  pf::Listing l = FromPaths({"dog/1.JPG", "dog/notes.txt", "dog/2.webp", ".hidden/h.png",
                             "cat/a.TiFf", "cat/b.jpg.bak", "top.jpg"});
  auto idx = pf::ImageFolderIndex(l);
  REQUIRE(idx.ok());
  CHECK(idx->classes == Paths{".hidden", "cat", "dog"});
  CHECK(idx->paths == Paths{".hidden/h.png", "cat/a.TiFf", "dog/1.JPG", "dog/2.webp"});
  CHECK(idx->labels == std::vector<uint32_t>{0, 1, 2, 2});
}

TEST_CASE("ImageFolder refuses an empty class and a root without classes", "[unit][prefetch]") {
  auto empty_dir = pf::ImageFolderIndex(FromPaths({"a/x.jpg", "b/"}));
  REQUIRE_FALSE(empty_dir.ok());
  CHECK(empty_dir.status().message().find("b") != std::string::npos);
  CHECK_FALSE(pf::ImageFolderIndex(FromPaths({"a/x.jpg", "c/readme.txt"})).ok());
  CHECK_FALSE(pf::ImageFolderIndex(FromPaths({"x.jpg"})).ok());
  pf::ImageFolderOptions allow;
  allow.allow_empty = true;
  auto allowed = pf::ImageFolderIndex(FromPaths({"a/x.jpg", "b/"}), allow);
  REQUIRE(allowed.ok());
  CHECK(allowed->classes.size() == 2);
}

TEST_CASE("ScanDirectory follows symlinks like os.walk", "[unit][prefetch]") {
  pf::testing::TempDir t;
  t.Touch("d/a/1.jpg");
  t.Touch("d/a/sub/2.jpg");
  t.Touch("elsewhere/3.jpg");
  t.MakeDir("d/empty");
  t.Symlink("../elsewhere", "d/linked");         // a class reached through a symlink
  t.Symlink("../a/1.jpg", "d/a/sub/alias.jpg");  // a file symlink
  t.Symlink("missing.jpg", "d/a/broken.jpg");    // broken: a file to os.walk
  auto l = pf::ScanDirectory(t.path() + "/d/");
  REQUIRE(l.ok());
  Paths files = l->files;
  std::sort(files.begin(), files.end());
  CHECK(files ==
        Paths{"a/1.jpg", "a/broken.jpg", "a/sub/2.jpg", "a/sub/alias.jpg", "linked/3.jpg"});
  CHECK(l->directories == Paths{"empty"});
}

TEST_CASE("ScanDirectory reports cycles and missing roots", "[unit][prefetch]") {
  pf::testing::TempDir t;
  t.Touch("d/a/1.jpg");
  t.Symlink("..", "d/a/loop");
  auto cyc = pf::ScanDirectory(t.path() + "/d");
  REQUIRE_FALSE(cyc.ok());
  CHECK(cyc.status().message().find("cycle") != std::string::npos);
  auto missing = pf::ScanDirectory(t.path() + "/nope");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().IsNotFound());
}
