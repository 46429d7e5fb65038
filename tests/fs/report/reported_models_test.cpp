// ReportedOrders with loaders reported by their settings: the model makes each
// epoch's files, the next EPOCH and GUESS segments, refusals and protocol errors.
#include <catch2/catch.hpp>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "fs/report/reported_orders.hpp"
#include "tests/fs/report/reported_orders_fixture.hpp"

namespace clairfs::fs {
namespace {

using namespace testing;

TEST_CASE("a loader reported by its settings: the model makes each epoch's files", "[report]") {
  Store s;
  std::vector<std::map<std::string, std::string>> asked;
  const std::vector<uint32_t> cat = s.Nodes({kPaths[0], kPaths[1]});
  s.orders.SetModelMaker([&](const std::map<std::string, std::string>& settings) {
    asked.push_back(settings);
    ReportedModel m;
    m.window = settings.count("wide") ? 64 : 1;
    m.memory_bytes = 1000;
    m.files = [cat](uint64_t epoch) -> Result<std::vector<uint32_t>> {
      if (epoch == 9) return Status::NotFound("no epoch 9");
      return epoch % 2 == 0 ? cat : std::vector<uint32_t>{cat[1], cat[0]};
    };
    return m;
  });
  auto c = s.orders.Connect();
  Send(c.get(), MainHello(5) + SettingsFrame(1, "sampler=keras\nroot=train\nseed=3\n"));
  REQUIRE(asked.size() == 1);
  CHECK(asked[0] ==
        std::map<std::string, std::string>{{"sampler", "keras"}, {"root", "train"}, {"seed", "3"}});
  CHECK(s.orders.SegmentCount(5) == 0);  // nothing until an epoch starts
  const uint64_t held = s.orders.memory_bytes();
  CHECK(held >= 1000);  // the model is charged
  Send(c.get(), EpochFrame(1, 0) + EpochFrame(1, 1));
  REQUIRE(s.orders.SegmentCount(5) == 2);
  auto e0 = s.orders.Segment(5, 0), e1 = s.orders.Segment(5, 1);
  REQUIRE((e0.ok() && e1.ok()));
  CHECK(e0->files == cat);
  CHECK(e1->files == std::vector<uint32_t>{cat[1], cat[0]});
  CHECK((e1->stream == 1 && e1->epoch == 1 && e1->unresolved == 0));
  // A pipeline reads one element at a time, in order within the window.
  CHECK((e1->batch_size == 1 && e1->num_workers == 0 && e1->prefetch_factor == 2));
  CHECK(e1->read_window == 1);
  // The model's window is the segment's; an epoch the model cannot make is
  // counted, not followed, and the connection stays.
  Send(c.get(), SettingsFrame(2, "wide=1\n") + EpochFrame(2, 0) + EpochFrame(2, 9));
  REQUIRE(s.orders.SegmentCount(5) == 3);
  CHECK(s.orders.Segment(5, 2)->read_window == 64);
  // A LOADER of the stream sets the shape.
  Send(c.get(), LoaderFrame(2, "batch_size=4\nnum_workers=3\n") + EpochFrame(2, 1));
  REQUIRE(s.orders.SegmentCount(5) == 4);
  CHECK((s.orders.Segment(5, 3)->batch_size == 4 && s.orders.Segment(5, 3)->num_workers == 3));
  CHECK(s.orders.Segment(5, 3)->read_window == 64);
  CHECK(s.Stats().find("\"models\":2,\"model_errors\":1,") != std::string::npos);
  CHECK(s.Stats().find("NotFound: epoch 9 of loader 2: no epoch 9") != std::string::npos);
  // An epoch past the models' range is not even asked for (a model may walk
  // every epoch before it).
  Send(c.get(), EpochFrame(2, ReportedOrders::kMaxModelEpoch + 1) + EpochFrame(2, ~uint64_t{0}));
  CHECK(s.orders.SegmentCount(5) == 4);  // the model would have made them
  CHECK(s.Stats().find("\"model_errors\":3,") != std::string::npos);
  c.reset();  // the models are let go with their connection
  CHECK(s.orders.memory_bytes() < held);
}

TEST_CASE("a model's next EPOCH is guessed by the step between its last two", "[report]") {
  Store s;
  const std::vector<uint32_t> cat = s.Nodes({kPaths[0], kPaths[1]});
  const std::vector<uint32_t> all = s.Nodes(kPaths);
  std::vector<uint64_t> made;  // the epochs the model was asked for
  s.orders.SetModelMaker([&](const std::map<std::string, std::string>&) {
    ReportedModel m;
    m.files = [&made, cat, all](uint64_t epoch) -> Result<std::vector<uint32_t>> {
      made.push_back(epoch);
      if (epoch == 7) return Status::NotFound("no epoch 7");
      if (epoch == 2) return std::vector<uint32_t>{all[3], all[0], all[2]};
      return epoch % 2 == 0 ? cat : std::vector<uint32_t>{cat[1], cat[0]};
    };
    return m;
  });
  int heard = 0;
  s.orders.SetListener([&heard] { ++heard; });
  auto c = s.orders.Connect();
  Send(c.get(), MainHello(5) + SettingsFrame(1, "sampler=keras\n"));
  CHECK_FALSE(s.orders.Guess(5, 0).ok());  // nothing reported: nothing to guess from
  Send(c.get(), EpochFrame(1, 0));
  // The epoch, then the guess: no step known yet, so 1 and 2 alike, their
  // files in turn, each once.
  CHECK(made == std::vector<uint64_t>{0, 1, 2});
  CHECK(heard == 2);  // the segment, then the guess
  auto g = s.orders.Guess(5, 1);
  REQUIRE(g.ok());
  CHECK(g->files == std::vector<uint32_t>{cat[1], all[3], cat[0], all[2]});
  CHECK((g->stream == 1 && g->epoch == 1 && g->batch_size == 1 && g->read_window == 1));
  CHECK_FALSE(s.orders.Guess(5, 0).ok());  // reported: no guess at it
  CHECK_FALSE(s.orders.Guess(5, 2).ok());  // not the next one
  // Keras 3's fit reads every other iteration: 2 after 0 guesses 4.
  Send(c.get(), EpochFrame(1, 2));
  CHECK(made == std::vector<uint64_t>{0, 1, 2, 2, 4});
  REQUIRE(s.orders.Guess(5, 2).ok());
  CHECK(s.orders.Guess(5, 2)->epoch == 4);
  CHECK_FALSE(s.orders.Guess(5, 1).ok());  // dropped once segment 1 came
  // A guess the model cannot make is no error and leaves no guess.
  Send(c.get(), EpochFrame(1, 5));
  CHECK(made.back() == 8);
  Send(c.get(), EpochFrame(1, 6));  // step 1: guesses 7, which the model refuses
  CHECK(made.back() == 7);
  CHECK_FALSE(s.orders.Guess(5, 4).ok());
  CHECK(s.Stats().find("\"model_errors\":0,") != std::string::npos);
}

TEST_CASE("a GUESS is the process's guess at its next segment until that one comes", "[report]") {
  Store s;
  int heard = 0;
  s.orders.SetListener([&heard] { ++heard; });
  auto c = s.orders.Connect();
  Send(c.get(), MainHello(9) + TablePathsFrame(7, 0, kPaths) + LoaderFrame(1, "batch_size=2\n") +
                    OrderFrame(7, 1, 0, true, {0, 1}) + GuessFrame(7, 1, 1, false, {3}));
  CHECK_FALSE(s.orders.Guess(9, 1).ok());  // not complete yet
  Send(c.get(), GuessFrame(7, 1, 1, true, {2}));
  CHECK(heard == 2);  // the segment, then the guess
  auto g = s.orders.Guess(9, 1);
  REQUIRE(g.ok());
  CHECK(g->files == s.Nodes({kPaths[3], kPaths[2]}));
  CHECK((g->stream == 1 && g->epoch == 1 && g->batch_size == 2));
  CHECK(s.orders.SegmentCount(9) == 1);  // a guess is no segment
  // A second guess at the same segment is not taken: the first stays.
  Send(c.get(), GuessFrame(7, 1, 1, true, {0}));
  CHECK(s.orders.Guess(9, 1)->files == s.Nodes({kPaths[3], kPaths[2]}));
  // The segment it guessed comes, and differs: the guess is gone.
  Send(c.get(), OrderFrame(7, 1, 1, true, {1, 0}));
  CHECK_FALSE(s.orders.Guess(9, 1).ok());
  CHECK_FALSE(s.orders.Guess(9, 2).ok());
  CHECK(s.orders.Segment(9, 1)->files == s.Nodes({kPaths[1], kPaths[0]}));
  // Only a main process may guess.
  auto w = s.orders.Connect();
  const std::string bytes = WorkerHello(10) + GuessFrame(7, 1, 0, true, {0});
  const Status st = w->Feed(bytes.data(), bytes.size());
  CHECK(st.message().find("GUESS from a process whose HELLO is not role=main") !=
        std::string::npos);
}

TEST_CASE("refused settings are counted once and their epochs ignored", "[report]") {
  Store s;
  s.orders.SetModelMaker([](const std::map<std::string, std::string>&) -> Result<ReportedModel> {
    return Status::InvalidArgument("prefetch_seed: 'x' is not a number");
  });
  auto c = s.orders.Connect();
  Send(c.get(), MainHello(6) + SettingsFrame(4, "seed=x\n") + EpochFrame(4, 0) +
                    SettingsFrame(5, "seed=y\n") + EpochFrame(5, 0));
  CHECK(s.orders.SegmentCount(6) == 0);
  const std::string stats = s.Stats();
  CHECK(stats.find("\"models\":0,\"model_errors\":2,") != std::string::npos);
  CHECK(stats.find("InvalidArgument: the settings of loader 4 of process 6: prefetch_seed") !=
        std::string::npos);
  // Without a model maker, settings are refused the same way.
  Store bare;
  auto d = bare.orders.Connect();
  Send(d.get(), MainHello(7) + SettingsFrame(1, "sampler=keras\n") + EpochFrame(1, 0));
  CHECK(bare.orders.SegmentCount(7) == 0);
  CHECK(bare.Stats().find("\"model_errors\":1,") != std::string::npos);
}

TEST_CASE("SETTINGS and EPOCH break the protocol when out of place", "[report]") {
  Store s;
  s.orders.SetModelMaker([](const std::map<std::string, std::string>&) -> Result<ReportedModel> {
    return ReportedModel{
        [](uint64_t) -> Result<std::vector<uint32_t>> { return std::vector<uint32_t>{}; }, 1, 0};
  });
  struct Case {
    std::string bytes, message;
  };
  std::string many;
  for (uint64_t i = 0; i <= ReportedOrders::kMaxModels; ++i) many += SettingsFrame(i, "");
  const std::vector<Case> cases = {
      {WorkerHello(1) + SettingsFrame(1, ""), "SETTINGS from a process whose HELLO is not"},
      {WorkerHello(1) + EpochFrame(1, 0), "EPOCH from a process whose HELLO is not"},
      {MainHello(1) + EpochFrame(3, 0), "EPOCH for stream 3 without its SETTINGS"},
      {MainHello(1) + SettingsFrame(2, "") + SettingsFrame(2, ""), "SETTINGS for stream 2 again"},
      {MainHello(1) + many, "SETTINGS for more than 16 loaders on one connection"},
      // Found by the fuzzer: a model's segments are files already, unchecked.
      {MainHello(1) + OrderFrame(~uint64_t{0}, 1, 0, true, {0}),
       "ORDER over table 18446744073709551615, which is reserved"},
  };
  for (const Case& k : cases) {
    INFO(k.message);
    auto c = s.orders.Connect();
    const Status st = c->Feed(k.bytes.data(), k.bytes.size());
    CHECK(st.IsCorruption());
    CHECK(st.message().find(k.message) != std::string::npos);
  }
}

}  // namespace
}  // namespace clairfs::fs
