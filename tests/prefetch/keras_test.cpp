// The Keras listing (versions, formats, shuffle, split) and the read window rule.
#include <catch2/catch.hpp>

#include "prefetch/keras/keras_listing.hpp"
#include "prefetch/order/read_window.hpp"
#include "tests/prefetch/vectors.hpp"

namespace pf = clairfs::prefetch;
using Paths = std::vector<std::string>;

namespace {
pf::Listing Tree() {
  return pf::ListingFromPaths(
             {"b/2.png", "b/1.GIF", "a/x.jpeg", "a/y.webp", ".h/z.jpg", "a/s/w.bmp", "top.jpg"})
      .value();
}
}  // namespace

TEST_CASE("Keras lists its formats in walk order, hidden classes skipped from 2.14",
          "[unit][prefetch]") {
  pf::KerasListingOptions o;
  o.shuffle = false;
  o.version = {2, 13};
  auto old = pf::KerasListing(Tree(), o);
  REQUIRE(old.ok());
  CHECK(old->paths == Paths{".h/z.jpg", "a/x.jpeg", "a/s/w.bmp", "b/1.GIF", "b/2.png"});
  CHECK(old->labels == std::vector<uint32_t>{0, 1, 1, 2, 2});
  o.version = {3, 0};
  auto newer = pf::KerasListing(Tree(), o);
  CHECK(newer->paths == Paths{"a/x.jpeg", "a/s/w.bmp", "b/1.GIF", "b/2.png"});
  CHECK(newer->classes == Paths{"a", "b"});
  o.labels_inferred = false;
  auto flat = pf::KerasListing(Tree(), o);
  CHECK(flat->paths == Paths{"top.jpg", ".h/z.jpg", "a/x.jpeg", "a/s/w.bmp", "b/1.GIF", "b/2.png"});
}

TEST_CASE("Keras shuffles the listing with RandomState(seed).shuffle", "[unit][prefetch]") {
  // 33 files whose sorted order is their number; the numpy vector for the same
  // seed and n says where each one lands.
  std::vector<std::string> names;
  for (int i = 0; i < 33; ++i) {
    names.push_back("c/" + std::string(i < 10 ? "0" : "") + std::to_string(i) + ".jpg");
  }
  pf::Listing l = pf::ListingFromPaths(names).value();
  for (const auto& v : pf::testing::kNumpyVectors) {
    if (v.n != 33) continue;
    pf::KerasListingOptions o;
    o.seed = v.seed;
    auto idx = pf::KerasListing(l, o);
    REQUIRE(idx.ok());
    for (size_t i = 0; i < 33; ++i) REQUIRE(idx->paths[i] == names[v.list_shuffle[i]]);
  }
}

TEST_CASE("Keras validation split keeps Python's slice quirks", "[unit][prefetch]") {
  pf::KerasListingOptions o;
  o.shuffle = false;
  o.validation_split = 0.4;  // 5 files: 2 for validation
  o.version = {2, 10};       // hidden class kept: 5 files
  auto train = pf::KerasListing(Tree(), o);
  CHECK(train->paths == Paths{".h/z.jpg", "a/x.jpeg", "a/s/w.bmp"});
  o.subset = pf::KerasListingOptions::Subset::kValidation;
  auto val = pf::KerasListing(Tree(), o);
  CHECK(val->paths == Paths{"b/1.GIF", "b/2.png"});
  CHECK(val->labels == std::vector<uint32_t>{2, 2});
  // int(0.1 * 5) == 0: samples[:-0] is empty, so training finds no image.
  o.validation_split = 0.1;
  o.subset = pf::KerasListingOptions::Subset::kTraining;
  CHECK_FALSE(pf::KerasListing(Tree(), o).ok());
}

TEST_CASE("Keras rejects seeds beyond 32 bits and empty listings", "[unit][prefetch]") {
  pf::KerasListingOptions o;
  o.seed = uint64_t{1} << 32;
  CHECK_FALSE(pf::KerasListing(Tree(), o).ok());
  o.seed = 1;
  CHECK_FALSE(pf::KerasListing(pf::ListingFromPaths({"a/x.txt"}).value(), o).ok());
}

TEST_CASE("Keras read window is 8 x batch from 3.3 on", "[unit][prefetch]") {
  pf::KerasListingOptions o;
  o.batch_size = 16;
  o.version = {3, 2};
  CHECK(pf::KerasReadWindow(o) == 1);
  o.version = {3, 3};
  CHECK(pf::KerasReadWindow(o) == 128);
  CHECK(pf::KerasVersion::Parse("3.3.3").value() == pf::KerasVersion{3, 3, 3});
  CHECK(pf::KerasVersion::Parse("3.3").value() == pf::KerasVersion{3, 3, 0});
  CHECK_FALSE(pf::KerasVersion::Parse("3.3.3.1").ok());
  CHECK_FALSE(pf::KerasVersion::Parse("3.3.").ok());
  CHECK(pf::KerasVersion{3, 2, 9}.ShufflesPathsEveryEpoch() == false);
  CHECK(pf::KerasVersion{3, 3, 0}.ShufflesPathsEveryEpoch());
  CHECK(pf::KerasVersion{3, 11, 3}.WalkFollowsSymlinksByDefault());
  CHECK_FALSE(pf::KerasVersion{3, 12, 0}.WalkFollowsSymlinksByDefault());
  CHECK_FALSE(pf::KerasVersion::Parse("1.0").ok());
  CHECK_FALSE(pf::KerasVersion::Parse("3").ok());
}

TEST_CASE("ReadWindow offers the next W unread files", "[unit][prefetch]") {
  auto w = pf::ReadWindow::Create({4, 2, 0, 1, 3}, 2);
  REQUIRE(w.ok());
  CHECK(w->Candidates() == std::vector<pf::Index>{4, 2});
  CHECK(w->MarkRead(2).value());
  CHECK(w->Candidates() == std::vector<pf::Index>{4, 0});
  CHECK_FALSE(w->MarkRead(3).value());  // outside the window: a deviation
  CHECK(w->Candidates() == std::vector<pf::Index>{4, 0});
  CHECK_FALSE(w->MarkRead(3).ok());  // twice
  CHECK(w->MarkRead(4).value());
  CHECK(w->MarkRead(1).value());
  CHECK(w->remaining() == 1);
  w->Reset();
  CHECK(w->remaining() == 5);
  CHECK_FALSE(pf::ReadWindow::Create({0, 0}, 2).ok());
  CHECK_FALSE(pf::ReadWindow::Create({0}, 0).ok());
}
