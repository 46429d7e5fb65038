// tf.data order pieces: Philox4x32-10, get_seed, the shuffle buffer and seed
// generator, matching_files globbing, driver iterator counts.
//
// Where the expected values come from (nothing here is computed by clairfs):
// - Random123's published known-answer vectors for philox4x32-10 (kat_vectors).
// - Real TensorFlow 2.21.0 (tf-current venv), recorded once:
//   tf.random.Generator.from_state(tf.constant(STATE, tf.int64), alg="philox")
//     .uniform_full_int([8], dtype=tf.uint32)   (raw Philox words)
//   [int(x) for x in tf.data.Dataset.range(N).shuffle(B, seed=S)], twice (and
//   the same with .repeat / .shard / tf.random.set_seed as in each test)
//   tf.io.matching_files and Dataset.list_files on a small tree (identical in
//   TF 2.15.1)
//   model.fit / loops over a shuffle whose per-iterator seeds were identified
//   (tests/tf/tf_data_orders.py checks the same rules end to end).
// - CPython 3.11: [random.Random(G).randint(0, 2**31 - 1) for _ in range(3)].
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "prefetch/options/read_order.hpp"
#include "prefetch/rng/tf_philox.hpp"
#include "prefetch/tf/tf_data_sampler.hpp"
#include "prefetch/tf/tf_glob.hpp"
#include "prefetch/tf/tf_seed.hpp"
#include "prefetch/tf/tf_shuffle.hpp"

using namespace clairfs::prefetch;

TEST_CASE("Philox4x32-10 matches Random123's known-answer vectors", "[tf]") {
  using B = TfPhilox::Block;
  CHECK(TfPhilox::Compute({0, 0, 0, 0}, {0, 0}) ==
        B{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u});
  CHECK(TfPhilox::Compute({0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
                          {0xffffffffu, 0xffffffffu}) ==
        B{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu});
  CHECK(TfPhilox::Compute({0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u},
                          {0xa4093822u, 0x299f31d0u}) ==
        B{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u});
}

TEST_CASE("TfPhilox matches TensorFlow's Philox generator output", "[tf]") {
  // state [0, 0, 0]: counter 0, key 0; two blocks.
  TfPhiloxWords zero(0, 0);
  std::vector<uint32_t> got;
  for (int i = 0; i < 8; ++i) got.push_back(zero.Next());
  CHECK(got == std::vector<uint32_t>{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u,
                                     0xf8e4cca4u, 0x5cb200dbu, 0xb1a574ebu, 0x097eff67u});
  // state [0, 5, 87654321] = PhiloxRandom(87654321, 5): key 87654321, counter
  // words 2-3 = 5 - what a shuffle with seed=5 and no global seed starts from.
  TfPhiloxWords shuffle_like(87654321, 5);
  got.clear();
  for (int i = 0; i < 8; ++i) got.push_back(shuffle_like.Next());
  CHECK(got == std::vector<uint32_t>{0xd4b1b42fu, 0xa6d4f38fu, 0x93989088u, 0xa7da5fefu,
                                     0x957b4998u, 0xd929c3a6u, 0xe65ad529u, 0x05d2f1ddu});
  // state [7, 2^63-1, -3]: a counter with every word in use.
  using B = TfPhilox::Block;
  B ctr{7, 0, 0xffffffffu, 0x7fffffffu};
  TfPhilox::Key key{0xfffffffdu, 0xffffffffu};
  CHECK(TfPhilox::Compute(ctr, key) == B{0x7e74b286u, 0x203213b1u, 0x329ab082u, 0x43c4da21u});
  ctr[0] = 8;
  CHECK(TfPhilox::Compute(ctr, key) == B{0xfead9d46u, 0x5f0a4d6du, 0x2d52a7d3u, 0x618669c7u});
}

TEST_CASE("internal operation seeds are Python's random.Random(G).randint", "[tf]") {
  struct Case {
    int64_t g;
    std::vector<int64_t> draws;
  };
  for (const Case& c : std::vector<Case>{{0, {1654615998, 1806341205, 173879092}},
                                         {1, {577090037, 271041745, 1095513148}},
                                         {42, {478163327, 107420369, 1181241943}},
                                         {8589934593, {412874776, 1110386547, 1872056496}},
                                         {-9, {1988601454, 1603362544, 1147333628}},
                                         {123456789, {1899526012, 1705848077, 1305108171}}}) {
    for (uint64_t k = 0; k < c.draws.size(); ++k) {
      CHECK(TfInternalOperationSeed(c.g, k) == c.draws[k]);
    }
  }
}

TEST_CASE("get_seed rules", "[tf]") {
  auto seeds = [](std::optional<int64_t> g, std::optional<int64_t> op, uint64_t draw = 0) {
    return TfGetSeed({g, op, draw}).value();
  };
  CHECK(seeds(std::nullopt, 5) == TfSeeds{87654321, 5});
  CHECK(seeds(std::nullopt, 2147483647) == TfSeeds{87654321, 0});
  CHECK(seeds(std::nullopt, -5) == TfSeeds{87654321, 2147483642});
  CHECK(seeds(42, 7) == TfSeeds{42, 7});
  CHECK(seeds(2147483649, 7) == TfSeeds{2, 7});
  CHECK(seeds(42, std::nullopt) == TfSeeds{42, 478163327});
  CHECK(seeds(42, std::nullopt, 2) == TfSeeds{42, 1181241943});
  CHECK(seeds(0, 0) == TfSeeds{0, 2147483647});           // (0, 0) rule
  CHECK(seeds(2147483647, 0) == TfSeeds{0, 2147483647});  // after truncation too
  auto none = TfGetSeed({});
  REQUIRE_FALSE(none.ok());
  CHECK(none.status().message().find("pass seed=") != std::string::npos);
}

TEST_CASE("shuffle buffer and per-iterator seeds match tf.data", "[tf]") {
  TfSeeds ds = TfGetSeed({std::nullopt, 5, 0}).value();
  std::vector<Index> range10 = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  CHECK(TfShuffleIterator(range10, 3, TfIteratorSeeds(ds, true, 0)) ==
        std::vector<Index>{1, 3, 4, 5, 2, 7, 8, 0, 9, 6});
  CHECK(TfShuffleIterator(range10, 3, TfIteratorSeeds(ds, true, 1)) ==
        std::vector<Index>{2, 1, 0, 4, 5, 7, 3, 9, 8, 6});
  TfSeeds zero = TfGetSeed({std::nullopt, 0, 0}).value();
  std::vector<Index> range7 = {0, 1, 2, 3, 4, 5, 6};
  CHECK(TfShuffleIterator(range7, 7, TfIteratorSeeds(zero, true, 0)) ==
        std::vector<Index>{3, 5, 1, 6, 2, 0, 4});
  CHECK(TfShuffleIterator(range7, 100, TfIteratorSeeds(zero, true, 1)) ==
        std::vector<Index>{6, 3, 0, 2, 4, 5, 1});
  // Buffer 1 keeps the order; a fixed seed generator repeats the same seeds.
  CHECK(TfShuffleIterator(range7, 1, TfIteratorSeeds(zero, true, 3)) == range7);
  CHECK(TfIteratorSeeds(zero, false, 9) == zero);
}

TEST_CASE("matching_files globbing as TensorFlow does it", "[tf]") {
  Listing l = ListingFromPaths({"top.jpg", ".hid/q.jpg", "B/b1.png", "a/x.jpg", "a/Y.JPG",
                                "a/noext", "a/.h.jpg", "a/sub/z.jpg", "a/[x].jpg", "a/x1.jpg",
                                "a/.dot/w.jpg", "\xc3\xa9/\xc3\xbc.jpg"})
                  .value();
  auto m = [&](const char* p) { return TfMatchingFiles(l, p).value(); };
  using V = std::vector<std::string>;
  CHECK(m("*") == V{".hid", "B", "a", "top.jpg", "\xc3\xa9"});
  CHECK(m("*/*.jpg") ==
        V{".hid/q.jpg", "a/.h.jpg", "a/[x].jpg", "a/x.jpg", "a/x1.jpg", "\xc3\xa9/\xc3\xbc.jpg"});
  CHECK(m("a/?.jpg") == V{"a/x.jpg"});
  CHECK(m("a/[xY]*") == V{"a/Y.JPG", "a/x.jpg", "a/x1.jpg"});
  CHECK(m("a/[!x]*") == V{"a/.dot", "a/.h.jpg", "a/Y.JPG", "a/[x].jpg", "a/noext", "a/sub"});
  CHECK(m("a/[^x]*") == m("a/[!x]*"));
  CHECK(m("**/*.jpg") == m("*/*.jpg"));
  CHECK(m("a/*/*") == V{"a/.dot/w.jpg", "a/sub/z.jpg"});
  CHECK(m("a/\\[x\\].jpg") == V{"a/[x].jpg"});
  CHECK(m("a/[[]x].jpg") == V{"a/[x].jpg"});
  CHECK(m("*/.*") == V{"a/.dot", "a/.h.jpg"});
  CHECK(m("\xc3\xa9/?.jpg") == V{"\xc3\xa9/\xc3\xbc.jpg"});  // ? is one character
  CHECK(TfMatchingFiles(l, "none/*").status().code() == clairfs::Code::kNotFound);
  CHECK_FALSE(TfMatchingFiles(l, "/abs/*").ok());
}

TEST_CASE("iterators each driver creates", "[tf]") {
  // Iterator indices observed on real runs (3 epochs, 12 elements, batch 4).
  auto iters = [](TfDriver d, bool val, uint64_t spe, uint64_t epoch) {
    TfDriverOptions o{d, 3, spe, val};
    std::vector<uint64_t> out;
    auto reads = TfEpochReads(o, epoch);
    for (const TfRead& r : reads.value()) out.push_back(r.iterator);
    return out;
  };
  using V = std::vector<uint64_t>;
  CHECK(iters(TfDriver::kLoop, false, 0, 2) == V{2});
  CHECK(iters(TfDriver::kKeras3Fit, false, 0, 0) == V{0});
  CHECK(iters(TfDriver::kKeras3Fit, false, 0, 2) == V{4});
  CHECK(iters(TfDriver::kKeras3Fit, true, 0, 1) == V{4, 6});
  CHECK(iters(TfDriver::kKeras3Fit, false, 3, 2) == V{2});
  CHECK(iters(TfDriver::kKeras2Fit, false, 0, 0) == V{1});
  CHECK(iters(TfDriver::kKeras2Fit, false, 0, 2) == V{3});
  CHECK(iters(TfDriver::kKeras2Fit, true, 0, 2) == V{7, 9});
  // tf.keras 2 with steps_per_epoch != batches: iterator 0 runs on, then ends.
  auto k2 = TfEpochReads({TfDriver::kKeras2Fit, 3, 2, false}, 1).value();
  REQUIRE(k2.size() == 1);
  CHECK(k2[0].iterator == 0);
  CHECK(k2[0].first_batch == 2);
  CHECK(k2[0].batches == 1);
  CHECK(TfEpochReads({TfDriver::kKeras2Fit, 3, 2, false}, 2).value().empty());
  CHECK_FALSE(TfEpochReads({TfDriver::kKeras3Fit, 3, 2, true}, 0).ok());
  // Keras 3, steps_per_epoch 2 of 3 batches: the iterator runs on, then ends.
  auto reads = TfEpochReads({TfDriver::kKeras3Fit, 3, 2, false}, 1).value();
  REQUIRE(reads.size() == 1);
  CHECK(reads[0].iterator == 0);
  CHECK(reads[0].first_batch == 2);
  CHECK(reads[0].batches == 1);
}

TEST_CASE("TfDataSampler refuses a shuffle without a seed", "[tf]") {
  TfDataOptions o;
  auto s = TfDataSampler::Create(10, o);
  REQUIRE_FALSE(s.ok());
  CHECK(s.status().message().find("seed") != std::string::npos);
  o.shuffle = false;
  CHECK(TfDataSampler::Create(10, o).ok());
}

TEST_CASE("repeat after and before the shuffle, as tf.data runs them", "[tf]") {
  // Real TF 2.21.0 and 2.15.1 (identical), two or three `for x in ds` loops.
  auto epochs = [](uint64_t size, TfDataOptions o, uint64_t count) {
    TfDataSampler s = TfDataSampler::Create(size, o).value();
    std::vector<std::vector<Index>> out;
    uint64_t rank = o.num_shards > 1 ? 1 : 0;
    for (uint64_t e = 0; e < count; ++e) out.push_back(s.Order(rank, e).value());
    return out;
  };
  using VV = std::vector<std::vector<Index>>;
  TfDataOptions fused;  // range(7).shuffle(3, seed=11).repeat(2): fused, 2 pairs per loop
  fused.seed.op_seed = 11;
  fused.buffer_size = 3;
  fused.repeat = 2;
  CHECK(epochs(7, fused, 2) ==
        VV{{2, 3, 4, 1, 6, 0, 5, 2, 1, 4, 0, 5, 6, 3}, {1, 0, 4, 5, 3, 6, 2, 0, 1, 4, 3, 6, 5, 2}});
  // range(10).shuffle(10, seed=8).shard(3, 1).repeat(2): a separate repeat,
  // which makes one more (unused) shuffle iterator after its last pass.
  TfDataOptions separate;
  separate.seed.op_seed = 8;
  separate.repeat = 2;
  separate.num_shards = 3;
  CHECK(epochs(10, separate, 3) == VV{{3, 6, 7, 6, 0, 5}, {7, 6, 5, 4, 3, 8}, {1, 5, 9, 3, 4, 0}});
  // The same fused pipeline with options shuffle_and_repeat_fusion=False.
  fused.repeat_fusion = false;
  CHECK(epochs(7, fused, 2) ==
        VV{{2, 3, 4, 1, 6, 0, 5, 2, 1, 4, 0, 5, 6, 3}, {0, 1, 4, 3, 6, 5, 2, 2, 0, 1, 4, 3, 6, 5}});
  // range(5).repeat(2).shuffle(4, seed=3): one shuffle over both passes.
  TfDataOptions before;
  before.seed.op_seed = 3;
  before.buffer_size = 4;
  before.repeat = 2;
  before.repeat_before_shuffle = true;
  CHECK(epochs(5, before, 2) == VV{{0, 3, 2, 1, 4, 2, 1, 0, 3, 4}, {0, 4, 1, 2, 0, 3, 1, 3, 4, 2}});
  // tf.random.set_seed(42); range(6).shuffle(6): the op seed is the first draw.
  TfDataOptions global;
  global.seed.global_seed = 42;
  CHECK(epochs(6, global, 2) == VV{{3, 1, 2, 0, 4, 5}, {2, 0, 4, 5, 1, 3}});
}

TEST_CASE("ReadOrder tf-list-files reproduces Dataset.list_files", "[tf]") {
  // tf.data.Dataset.list_files(ROOT + "/*/*", seed=7), two `for` loops, on
  // this tree (TF 2.21.0; hidden entries kept, directories matched too).
  Listing l = ListingFromPaths({"top.jpg", ".hid/q.jpg", "B/b1.png", "a/x.jpg", "a/Y.JPG",
                                "a/noext", "a/.h.jpg", "a/sub/z.jpg", "a/[x].jpg", "a/x1.jpg",
                                "a/.dot/w.jpg", "\xc3\xa9/\xc3\xbc.jpg"})
                  .value();
  OrderSpec spec;
  spec.kind = SamplerKind::kTfListFiles;
  spec.tf.glob = "*/*";
  spec.tf.seed.op_seed = 7;
  ReadOrder order = ReadOrder::Build(spec, &l).value();
  CHECK(order.window() == 1);
  using V = std::vector<std::string>;
  CHECK(order.Paths(0, 0).value() == V{"a/x1.jpg", "a/Y.JPG", "a/x.jpg", "a/sub", "a/[x].jpg",
                                       "a/noext", ".hid/q.jpg", "B/b1.png", "a/.h.jpg",
                                       "\xc3\xa9/\xc3\xbc.jpg", "a/.dot"});
  CHECK(order.Paths(0, 1).value() == V{"B/b1.png", "a/x1.jpg", "a/.h.jpg", "a/Y.JPG", "a/x.jpg",
                                       "a/sub", "a/.dot", "a/noext", "\xc3\xa9/\xc3\xbc.jpg",
                                       "a/[x].jpg", ".hid/q.jpg"});
  spec.tf.seed = {};
  CHECK_FALSE(ReadOrder::Build(spec, &l).ok());  // no seed anywhere: refused
}
