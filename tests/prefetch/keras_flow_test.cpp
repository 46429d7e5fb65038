// KerasFlow / the NumPy legacy draws ImageDataGenerator makes. Expected values
// were recorded from real NumPy 2.4.6 (tf-current venv) with:
//   rs = np.random.RandomState(s); rs.random_sample()            (doubles)
//   np.random.seed(77); [np.random.choice(5) for _ in range(6)]; np.random.permutation(10)
//   np.random.seed(123); 3 x (uniform, choice(3), choice([-1, 1]), uniform, uniform,
//     uniform(size=2), random(), random(), uniform, uniform); np.random.permutation(12)
//   np.random.seed(9); 5 x (random(), random()); np.random.permutation(7)
// The same calls, through the real ImageDataGenerator, are checked end to end
// by tests/tf/keras_real_check.py.
#include <catch2/catch.hpp>

#include "prefetch/keras_flow.hpp"

namespace pf = clairfs::prefetch;

TEST_CASE("NumPy legacy random_sample doubles", "[keras_flow]") {
  pf::NumpyRandomState a(0);
  CHECK(a.NextDouble() == 0.5488135039273248);
  CHECK(a.NextDouble() == 0.7151893663724195);
  CHECK(a.NextDouble() == 0.6027633760716439);
  pf::NumpyRandomState b(1);
  CHECK(b.NextDouble() == 0.417022004702574);
  CHECK(b.NextDouble() == 0.7203244934421581);
  CHECK(b.NextDouble() == 0.00011437481734488664);
  pf::NumpyRandomState c(4294967295u);
  CHECK(c.NextDouble() == 0.0976320289940138);
}

TEST_CASE("NumPy choice(n) is a masked random_interval, then permutation", "[keras_flow]") {
  pf::NumpyRandomState rng(1);
  rng.Seed(77);  // np.random.seed re-initialises
  std::vector<uint64_t> got;
  for (int i = 0; i < 6; ++i) got.push_back(rng.RandomInterval(4));
  CHECK(got == std::vector<uint64_t>{4, 4, 3, 0, 0, 1});
  CHECK(rng.Permutation(10) == std::vector<pf::Index>{1, 9, 8, 2, 6, 0, 3, 4, 5, 7});
}

TEST_CASE("Augmentation draws: every option, in get_random_transform order", "[keras_flow]") {
  auto aug = pf::KerasFlowAugment::Parse(
      "rotation_range=10,height_shift_range=3,width_shift_range=0.1,shear_range=5,"
      "zoom_range=0.2,channel_shift_range=20,brightness_range=0.5:1.5,horizontal_flip=1");
  REQUIRE(aug.ok());
  CHECK(aug->height_shift == pf::KerasFlowAugment::Shift::kChoice);
  CHECK(aug->height_choices == 3);
  CHECK(aug->width_shift == pf::KerasFlowAugment::Shift::kUniform);
  pf::NumpyRandomState rng(123);
  for (int i = 0; i < 3; ++i) aug->Draw(rng);
  CHECK(rng.Permutation(12) ==
        std::vector<pf::Index>{1, 5, 11, 8, 7, 9, 3, 4, 10, 6, 2, 0});
}

TEST_CASE("Default ImageDataGenerator still draws both flips per image", "[keras_flow]") {
  auto aug = pf::KerasFlowAugment::Parse("");
  REQUIRE(aug.ok());
  pf::NumpyRandomState rng(9);
  for (int i = 0; i < 5; ++i) aug->Draw(rng);
  CHECK(rng.Permutation(7) == std::vector<pf::Index>{3, 1, 2, 6, 0, 4, 5});
}

TEST_CASE("Augment parsing: Python truthiness and choice fallbacks", "[keras_flow]") {
  using Shift = pf::KerasFlowAugment::Shift;
  CHECK(pf::KerasFlowAugment::Parse("width_shift_range=0")->width_shift == Shift::kNone);
  CHECK(pf::KerasFlowAugment::Parse("width_shift_range=2.0")->width_shift == Shift::kUniform);
  CHECK(pf::KerasFlowAugment::Parse("width_shift_range=-3")->width_shift == Shift::kUniform);
  CHECK(pf::KerasFlowAugment::Parse("width_shift_range=-2:0:2")->width_choices == 3);
  CHECK_FALSE(pf::KerasFlowAugment::Parse("zoom_range=0")->zoom);
  CHECK_FALSE(pf::KerasFlowAugment::Parse("zoom_range=1:1")->zoom);
  CHECK(pf::KerasFlowAugment::Parse("zoom_range=1:1.1")->zoom);
  CHECK_FALSE(pf::KerasFlowAugment::Parse("rotaton_range=3").ok());
  CHECK_FALSE(pf::KerasFlowAugment::Parse("brightness_range=1").ok());
  CHECK_FALSE(pf::KerasFlowAugment::Parse("preprocessing_function=f").ok());
}

TEST_CASE("flow_from_directory listing rules", "[keras_flow]") {
  pf::Listing l;
  l.files = {".h/a.png", "c/b.JPG", "c/xpng", "c/n.txt", "c/s/z.tif", "c/l/q.png", "d/1.png",
             "d/2.png", "d/3.png", "d/4.png", "top.png"};
  l.symlinked_directories = {"c/l"};
  pf::KerasFlowOptions o;
  o.shuffle = false;
  auto idx = pf::KerasFlowListing(l, o);
  REQUIRE(idx.ok());
  CHECK(idx->paths == std::vector<std::string>{".h/a.png", "c/b.JPG", "c/xpng", "c/s/z.tif",
                                               "d/1.png", "d/2.png", "d/3.png", "d/4.png"});
  o.follow_links = true;
  o.validation_split = 0.5;
  o.subset = pf::KerasFlowOptions::Subset::kValidation;  // per class: files[:int(0.5 n)]
  idx = pf::KerasFlowListing(l, o);
  REQUIRE(idx.ok());
  // c walks b.JPG xpng, then c/l/q.png (followed), c/s/z.tif: keeps the first two.
  CHECK(idx->paths == std::vector<std::string>{"c/b.JPG", "c/xpng", "d/1.png", "d/2.png"});
}

TEST_CASE("keras-flow refuses what it cannot know", "[keras_flow]") {
  pf::Listing l;
  l.files = {"a/1.png", "a/2.png", "a/3.png"};
  pf::KerasFlowOptions o;  // shuffle without a seed
  auto none = pf::KerasFlow::Create(l, o);
  REQUIRE_FALSE(none.ok());
  CHECK(none.status().message().find("pass seed=S to flow_from_directory") != std::string::npos);
  o.seed = 1;
  o.batch_size = 2;
  o.protocol = pf::KerasFlowOptions::Protocol::kFit;
  auto flow = pf::KerasFlow::Create(l, o);
  REQUIRE(flow.ok());
  CHECK(flow->EpochBatches(0).ok());
  // The last batch's size is unknown (3 % 2 != 0): two candidate index
  // arrays, no order.
  CHECK_FALSE(flow->Order(0, 1).ok());
  CHECK(flow->EpochPermutations(1)->size() == 2);
  CHECK(flow->EpochBatches(1)->size() == 4);
  o.fit_shuffle = false;
  CHECK(pf::KerasFlow::Create(l, o)->EpochBatches(1).ok());
}

TEST_CASE("keras-flow fit is refused for Keras 3 before 3.7", "[keras_flow]") {
  pf::Listing l;
  l.files = {"a/1.png", "a/2.png"};
  pf::KerasFlowOptions o;
  o.seed = 1;
  o.protocol = pf::KerasFlowOptions::Protocol::kFit;
  o.version = {3, 6, 0};
  CHECK_FALSE(pf::KerasFlow::Create(l, o).ok());
  o.version = {3, 7, 0};
  CHECK(pf::KerasFlow::Create(l, o).ok());
  o.version = {2, 15, 0};
  CHECK(pf::KerasFlow::Create(l, o).ok());
}
