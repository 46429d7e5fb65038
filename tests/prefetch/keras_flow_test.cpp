// KerasFlow / the NumPy legacy draws ImageDataGenerator makes. Expected values
// were recorded from real NumPy 2.4.6 (tf-current venv) with:
//   rs = np.random.RandomState(s); rs.random_sample()            (doubles)
//   np.random.seed(77); [np.random.choice(5) for _ in range(6)]; np.random.permutation(10)
//   np.random.seed(123); 3 x (uniform, choice(3), choice([-1, 1]), uniform, uniform,
//     uniform(size=2), random(), random(), uniform, uniform); np.random.permutation(12)
//   np.random.seed(9); 5 x (random(), random()); np.random.permutation(7)
// The same calls, through the real ImageDataGenerator, are checked end to end
// by tests/tf/keras_real_check.py.
#include "prefetch/keras/keras_flow.hpp"

#include <catch2/catch.hpp>

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
  CHECK(rng.Permutation(12) == std::vector<pf::Index>{1, 5, 11, 8, 7, 9, 3, 4, 10, 6, 2, 0});
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
  l.files = {".h/a.png", "c/b.JPG", "c/xpng",  "c/n.txt", "c/s/z.tif", "c/l/q.png",
             "d/1.png",  "d/2.png", "d/3.png", "d/4.png", "top.png"};
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

TEST_CASE("keras-flow fit with shuffle gives its epochs as sets of batches", "[keras_flow]") {
  pf::Listing l;
  for (int i = 0; i < 12; ++i) l.files.push_back("a/" + std::to_string(i) + ".png");
  pf::KerasFlowOptions o;
  o.seed = 3;
  o.batch_size = 4;
  o.protocol = pf::KerasFlowOptions::Protocol::kFit;
  for (pf::KerasVersion v : {pf::KerasVersion{3, 15, 0}, pf::KerasVersion{2, 15, 0}}) {
    o.version = v;
    auto flow = pf::KerasFlow::Create(l, o);
    REQUIRE(flow.ok());
    for (uint64_t epoch : {0, 1, 2}) {
      auto b = flow->Batches(0, epoch);
      REQUIRE(b.ok());
      REQUIRE(b->has_value());
      CHECK((*b)->batches == flow->EpochBatches(epoch).value());
      CHECK((*b)->reads == 3);
      // Only epoch 0 starts with the tensor-spec batches, in their known order.
      auto pre = flow->PreTrainingBatches().value();
      CHECK(pre.size() == (v.major >= 3 ? 2u : 1u));
      CHECK((*b)->lead == (epoch == 0 ? pre : std::vector<std::vector<pf::Index>>{}));
    }
    CHECK_FALSE(flow->Batches(1, 0).ok());
  }
  // Known batch orders: Order() is the read order.
  o.fit_shuffle = false;
  CHECK_FALSE(pf::KerasFlow::Create(l, o)->Batches(0, 1)->has_value());
  o.fit_shuffle = true;
  o.protocol = pf::KerasFlowOptions::Protocol::kNext;
  CHECK_FALSE(pf::KerasFlow::Create(l, o)->Batches(0, 1)->has_value());
}

namespace {
// 36 images in 3 classes: len(it) = 9 batches of 4.
pf::Listing ThirtySix() {
  pf::Listing l;
  for (int i = 0; i < 36; ++i) {
    l.files.push_back("c" + std::to_string(i % 3) + "/" + std::to_string(i) + ".png");
  }
  return l;
}
pf::KerasFlowOptions Fit(pf::KerasVersion v, uint64_t steps, bool fit_shuffle) {
  pf::KerasFlowOptions o;
  o.version = v;
  o.seed = 5;
  o.batch_size = 4;
  o.protocol = pf::KerasFlowOptions::Protocol::kFit;
  o.fit_shuffle = fit_shuffle;
  o.steps_per_epoch = steps;
  return o;
}
const pf::KerasVersion kKeras2{2, 15, 0};
const pf::KerasVersion kKeras3{3, 15, 1};
}  // namespace

TEST_CASE("steps_per_epoch: bad values name the option", "[keras_flow]") {
  pf::Listing l = ThirtySix();
  auto over = pf::KerasFlow::Create(l, Fit(kKeras3, 10, true));
  REQUIRE_FALSE(over.ok());
  CHECK(over.status().message().find("--steps-per-epoch 10 is more than len(it) = 9") !=
        std::string::npos);
  pf::KerasFlowOptions next = Fit(kKeras3, 3, true);
  next.protocol = pf::KerasFlowOptions::Protocol::kNext;
  auto n = pf::KerasFlow::Create(l, next);
  REQUIRE_FALSE(n.ok());
  CHECK(n.status().message().find("needs --protocol fit") != std::string::npos);
  pf::KerasFlowOptions val = Fit(kKeras2, 3, true);
  val.fit_validation_seed = 1;
  val.validation_split = 0.25;
  val.subset = pf::KerasFlowOptions::Subset::kTraining;
  CHECK_FALSE(pf::KerasFlow::Create(l, val).ok());
}

TEST_CASE("steps_per_epoch == len(it) is fit without it", "[keras_flow]") {
  pf::Listing l = ThirtySix();
  for (pf::KerasVersion v : {kKeras2, kKeras3}) {
    auto with = pf::KerasFlow::Create(l, Fit(v, 9, false));
    auto without = pf::KerasFlow::Create(l, Fit(v, 0, false));
    REQUIRE(with.ok());
    REQUIRE(without.ok());
    for (uint64_t e = 0; e < 4; ++e) {
      CHECK(with->Order(0, e).value() == without->Order(0, e).value());
      CHECK(with->BatchReads(e) == 9);
      CHECK(with->ReadAhead(e) == 0);
      CHECK(with->EpochDraws(e)->exact());
    }
  }
}

TEST_CASE("steps_per_epoch < len(it): tf.keras 2 restarts the pass every epoch", "[keras_flow]") {
  auto flow = pf::KerasFlow::Create(ThirtySix(), Fit(kKeras2, 4, false));
  REQUIRE(flow.ok());
  for (uint64_t e = 0; e < 3; ++e) {
    CHECK(flow->BatchReads(e) == 4);
    CHECK(flow->ReadAhead(e) == 5);  // up to the pass's end, never trained on
    CHECK(flow->EpochBatchPositions(e) == std::vector<uint64_t>{0, 1, 2, 3});
  }
  // Epoch 0: the peeked x[0]'s permutation, exact.
  CHECK(flow->EpochDraws(0)->exact());
  CHECK(flow->Order(0, 0)->size() == 4 + 16);  // the peeked batch, then 4 batches
  // Epoch 2: 1 + 2 * 4 .. 1 + 2 * 9 reads, any of the 4 x 2 flip draws: candidates.
  auto d = flow->EpochDraws(2);
  REQUIRE(d.ok());
  CHECK(d->reads_min == 9);
  CHECK(d->reads_max == 19);
  CHECK(d->calls.size() == 9);
  CHECK(d->repeats_max == 0);
  auto perms = flow->EpochPermutations(2);
  REQUIRE(perms.ok());
  CHECK(perms->size() == 11 * 9 + 1);
  // A read racing on_epoch_end may slice the np.arange(n) it holds meanwhile.
  std::vector<pf::Index> arange(36);
  for (pf::Index i = 0; i < 36; ++i) arange[i] = i;
  CHECK(perms->back() == arange);
  auto order = flow->Order(0, 2);
  REQUIRE_FALSE(order.ok());
  CHECK(order.status().message().find("only epoch 0 is exact") != std::string::npos);
  // PermutationAfter is what EpochPermutations enumerates.
  CHECK(flow->PermutationAfter(9, 0).value() == flow->EpochPermutations(2)->front());
}

TEST_CASE("steps_per_epoch < len(it): Keras 3 cuts one pass into epochs", "[keras_flow]") {
  auto flow = pf::KerasFlow::Create(ThirtySix(), Fit(kKeras3, 4, false));
  REQUIRE(flow.ok());
  // A pass of 9 batches: epochs of 4, 4 and 1 (the step loop breaks at len(it)).
  const std::vector<uint64_t> reads = {4, 4, 1, 4, 4, 1};
  for (uint64_t e = 0; e < reads.size(); ++e) CHECK(flow->BatchReads(e) == reads[e]);
  CHECK(flow->ReadAhead(0) == 5);
  CHECK(flow->ReadAhead(1) == 1);
  CHECK(flow->ReadAhead(2) == 0);
  CHECK(flow->EpochBatchPositions(1) == std::vector<uint64_t>{4, 5, 6, 7});
  CHECK(flow->EpochBatchPositions(2) == std::vector<uint64_t>{8});
  CHECK(flow->EpochDraws(0)->exact());  // after the 2 spec batches
  // Pass start: all 2 + 9 reads done, the last batch's 8 flip draws made,
  // up to 2 earlier permutations interleaved (epochs that read nothing new).
  auto d = flow->EpochDraws(3);
  REQUIRE(d.ok());
  CHECK(d->reads_min == 11);
  CHECK(d->reads_max == 11);
  CHECK(d->calls == std::vector<uint64_t>{8});
  CHECK(d->repeats_max == 2);
  CHECK(flow->EpochPermutations(3)->size() == 1 + 9 + 45);  // C(8 + r, r), r = 0..2
  CHECK(flow->PermutationAfter(11, 8).value() == flow->EpochPermutations(3)->front());
  // Mid-pass: 2 + 4 .. 2 + 9 reads.
  d = flow->EpochDraws(1);
  CHECK(d->reads_min == 6);
  CHECK(d->reads_max == 11);
  CHECK(d->repeats_max == 0);
  CHECK_FALSE(flow->Order(0, 1).ok());
  // EpochBatches of an exact epoch is its order.
  auto batches = flow->EpochBatches(0);
  REQUIRE(batches.ok());
  CHECK(batches->size() == 4);
}

TEST_CASE("PermutationAfter refuses draws a batch cannot make", "[keras_flow]") {
  auto flow = pf::KerasFlow::Create(ThirtySix(), Fit(kKeras3, 4, true));
  REQUIRE(flow.ok());
  CHECK(flow->PermutationAfter(5, 8).ok());
  CHECK_FALSE(flow->PermutationAfter(5, 9).ok());          // 4 images x 2 flips
  CHECK_FALSE(flow->PermutationAfter(5, 4, {3, 2}).ok());  // not ascending
  CHECK_FALSE(flow->PermutationAfter(5, 4, {5}).ok());     // after the last call
}

TEST_CASE("keras-flow gives epochs with candidate index arrays as sets of batches",
          "[keras_flow]") {
  for (pf::KerasVersion v : {kKeras2, kKeras3}) {
    // steps_per_epoch 4 of 9, batches in order: epoch 0 exact, later epochs
    // have candidate arrays, so every epoch comes as batches.
    auto flow = pf::KerasFlow::Create(ThirtySix(), Fit(v, 4, false));
    REQUIRE(flow.ok());
    for (uint64_t epoch : {0, 1, 2, 3}) {
      auto b = flow->Batches(0, epoch);
      REQUIRE(b.ok());
      REQUIRE(b->has_value());
      CHECK((*b)->batches == flow->EpochBatches(epoch).value());
      CHECK((*b)->reads == flow->BatchReads(epoch));
      CHECK((*b)->lead.empty() == (epoch != 0));
    }
    CHECK(flow->EpochPermutations(1)->size() > 1);
    // steps_per_epoch = len(it): one array per epoch, read in order.
    CHECK_FALSE(pf::KerasFlow::Create(ThirtySix(), Fit(v, 9, false))->Batches(0, 2)->has_value());
  }
  // 35 images under fit(shuffle=True): whether the short batch ran last
  // leaves two candidate arrays from epoch 1 on, each one's batches a unit.
  pf::Listing l = ThirtySix();
  l.files.pop_back();
  auto flow = pf::KerasFlow::Create(l, Fit(kKeras2, 0, true));
  REQUIRE(flow.ok());
  auto b = flow->Batches(0, 1);
  REQUIRE(b.ok());
  REQUIRE(b->has_value());
  REQUIRE(flow->EpochPermutations(1)->size() == 2);
  CHECK((*b)->batches.size() == 2 * flow->batches_per_epoch());
  CHECK((*b)->reads == flow->batches_per_epoch());
}
