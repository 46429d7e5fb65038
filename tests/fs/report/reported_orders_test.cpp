// ReportedOrders: tables, learned files, aliases, segments and their
// resolution when asked, what is kept, what is refused, what is counted.
// Loaders reported by their settings (models, guesses): reported_models_test.cpp.
#include "fs/report/reported_orders.hpp"

#include <catch2/catch.hpp>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tests/fs/report/reported_orders_fixture.hpp"

namespace clairfs::fs {
namespace {

using namespace testing;

TEST_CASE("a segment carries its loader's shape, as the last LOADER of its stream said",
          "[report]") {
  Store s;
  auto c = s.orders.Connect();
  Send(c.get(), MainHello(100) + TablePathsFrame(7, 0, kPaths) + OrderFrame(7, 1, 0, true, {0}) +
                    LoaderFrame(1, "batch_size=8\nnum_workers=2\nprefetch_factor=3\n") +
                    OrderFrame(7, 1, 1, true, {1}) + LoaderFrame(2, "batch_size=64\n") +
                    OrderFrame(7, 2, 0, true, {2}));
  REQUIRE(s.orders.SegmentCount(100) == 3);
  auto none = s.orders.Segment(100, 0);  // before any LOADER
  auto one = s.orders.Segment(100, 1);
  auto other = s.orders.Segment(100, 2);  // another stream, another shape
  REQUIRE((none.ok() && one.ok() && other.ok()));
  CHECK(none->batch_size == -1);
  CHECK((one->batch_size == 8 && one->num_workers == 2 && one->prefetch_factor == 3));
  CHECK((other->batch_size == 64 && other->num_workers == -1 && other->prefetch_factor == -1));
}

TEST_CASE("reported tables and orders become segments of files", "[report]") {
  Store s;
  auto c = s.orders.Connect();
  Send(c.get(), MainHello(100, 2) + TablePathsFrame(7, 0, {kPaths[0], kPaths[1]}) +
                    TablePathsFrame(7, 2, {kPaths[2], kPaths[3]}) +
                    OrderFrame(7, 1, 0, false, {3, 0}));
  CHECK(s.orders.Processes().empty());  // nothing complete yet
  CHECK(s.orders.SegmentCount(100) == 0);
  Send(c.get(), OrderFrame(7, 1, 0, true, {2}));
  CHECK(s.orders.Processes() == std::vector<uint64_t>{100});
  REQUIRE(s.orders.SegmentCount(100) == 1);
  auto seg = s.orders.Segment(100, 0);
  REQUIRE(seg.ok());
  CHECK(seg->stream == 1);
  CHECK(seg->epoch == 0);
  CHECK(seg->files == s.Nodes({kPaths[3], kPaths[0], kPaths[2]}));
  CHECK(seg->unresolved == 0);
  auto info = s.orders.Info(100);
  REQUIRE(info.has_value());
  CHECK(info->role == "main");
  CHECK(info->pid == 100);
  CHECK(info->rank == 2);
  CHECK(info->world_size == 4);
  CHECK(info->local_rank == 1);
  CHECK(info->local_size == 2);
  CHECK(info->framework == "torch");
  CHECK_FALSE(s.orders.Info(101).has_value());
  // Two streams of one process interleave; each completes on its own.
  Send(c.get(), OrderFrame(7, 2, 5, false, {1}) + OrderFrame(7, 1, 1, true, {0, 1}) +
                    OrderFrame(7, 2, 5, true, {1}));
  REQUIRE(s.orders.SegmentCount(100) == 3);
  CHECK(s.orders.Segment(100, 1)->epoch == 1);
  CHECK(s.orders.Segment(100, 1)->files == s.Nodes({kPaths[0], kPaths[1]}));
  CHECK(s.orders.Segment(100, 2)->stream == 2);
  CHECK(s.orders.Segment(100, 2)->files == s.Nodes({kPaths[1], kPaths[1]}));
  const std::string stats = s.Stats();
  CHECK(stats.find("\"segments\":3") != std::string::npos);
  CHECK(stats.find("\"frames\":8") != std::string::npos);
  CHECK(stats.find("\"processes\":1") != std::string::npos);
  CHECK(stats.find("\"connections_accepted\":1") != std::string::npos);
}

TEST_CASE("a TABLE_PATHS chunk must follow on", "[report]") {
  Store s;
  auto c = s.orders.Connect();
  Send(c.get(), MainHello(1) + TablePathsFrame(7, 0, {kPaths[0], kPaths[1]}));
  const std::string gap = TablePathsFrame(7, 3, {kPaths[2]});
  const Status st = c->Feed(gap.data(), gap.size());
  CHECK(st.IsCorruption());
  CHECK(st.message() ==
        "frame 3: TABLE_PATHS of table 7: first 3 does not follow on (the table "
        "has 2 entries)");
  CHECK(c->Close(st));  // the daemon's first error
  const std::string stats = s.Stats();
  CHECK(stats.find("\"connections_closed_bad\":1") != std::string::npos);
  CHECK(stats.find("does not follow on") != std::string::npos);
  // Another connection may continue the table: tables are global.
  auto d = s.orders.Connect();
  Send(d.get(), MainHello(2) + TablePathsFrame(7, 2, {kPaths[2]}) + OrderFrame(7, 0, 0, true, {2}));
  CHECK(s.orders.Segment(2, 0)->files == s.Nodes({kPaths[2]}));
  const Status later = Status::Corruption("another");
  CHECK_FALSE(d->Close(later));  // logged once per daemon
}

TEST_CASE("files learned by workers replace a table's entry, also after the fact", "[report]") {
  Store s;
  auto main = s.orders.Connect();
  auto worker = s.orders.Connect();
  Send(main.get(), MainHello(100) + TablePathsFrame(7, 0, {kPaths[0], kPaths[1], kPaths[2]}) +
                       OrderFrame(7, 0, 0, true, {0, 1, 2}));
  CHECK(s.orders.Segment(100, 0)->files == s.Nodes({kPaths[0], kPaths[1], kPaths[2]}));
  // A worker learns index 1's files under its iterator's key (99), before
  // the main process says that 99 means table 7.
  Send(worker.get(),
       WorkerHello(200) + TableFilesFrame(99, {{1, {"x/a.tfrecord", "x/b.tfrecord"}}}));
  CHECK(s.orders.Segment(100, 0)->files == s.Nodes({kPaths[0], kPaths[1], kPaths[2]}));
  Send(main.get(), AliasFrame(99, 7));
  CHECK(s.orders.Segment(100, 0)->files ==
        s.Nodes({kPaths[0], "x/a.tfrecord", "x/b.tfrecord", kPaths[2]}));
  // Once the alias is known, new reports under it land in table 7 at once.
  Send(worker.get(), TableFilesFrame(99, {{2, {"x/c.tfrecord"}}}));
  CHECK(s.orders.Segment(100, 0)->files ==
        s.Nodes({kPaths[0], "x/a.tfrecord", "x/b.tfrecord", "x/c.tfrecord"}));
  // Replacing: the latest report of an index counts; none at all falls back
  // to the table's path.
  Send(worker.get(), TableFilesFrame(7, {{1, {"x/c.tfrecord"}}, {2, {}}}));
  CHECK(s.orders.Segment(100, 0)->files == s.Nodes({kPaths[0], "x/c.tfrecord", kPaths[2]}));
  // A worker's HELLO makes no process, and a worker may not report orders.
  CHECK(s.orders.Processes() == std::vector<uint64_t>{100});
  CHECK_FALSE(s.orders.Info(200).has_value());
  const std::string order = OrderFrame(7, 0, 0, true, {0});
  const Status st = worker->Feed(order.data(), order.size());
  CHECK(st.IsCorruption());
  CHECK(st.message().find("ORDER from a process whose HELLO is not role=main") !=
        std::string::npos);
}

TEST_CASE("a segment's indices are resolved when it is asked for", "[report]") {
  Store s;
  auto c = s.orders.Connect();
  // The order arrives before its table.
  Send(c.get(), MainHello(5) + OrderFrame(8, 0, 0, true, {1, 0}));
  auto before = s.orders.Segment(5, 0);
  REQUIRE(before.ok());
  CHECK(before->files.empty());
  CHECK(before->unresolved == 2);
  CHECK(before->unlearned == 2);  // no table yet: nothing known of either
  Send(c.get(), TablePathsFrame(8, 0, {kPaths[3], kPaths[2]}));
  auto after = s.orders.Segment(5, 0);
  CHECK(after->files == s.Nodes({kPaths[2], kPaths[3]}));
  CHECK(after->unresolved == 0);
  CHECK(after->unlearned == 0);
}

TEST_CASE("a learned table's indices no process has learned yet are counted", "[report]") {
  Store s;
  auto c = s.orders.Connect();
  // A Dataset whose files are learned from its opens: index 0 learned, 1
  // and 2 not yet (the segment is drawn before its first batch is read).
  Send(c.get(), MainHello(5) + TableFilesFrame(4, {{0, {kPaths[1]}}}) +
                    OrderFrame(4, 0, 0, true, {2, 0, 1}));
  auto seg = s.orders.Segment(5, 0);
  REQUIRE(seg.ok());
  CHECK(seg->files == s.Nodes({kPaths[1]}));
  CHECK(seg->unresolved == 2);
  CHECK(seg->unlearned == 2);
  Send(c.get(), TableFilesFrame(4, {{1, {kPaths[0]}}, {2, {kPaths[2]}}}));
  seg = s.orders.Segment(5, 0);
  CHECK(seg->files == s.Nodes({kPaths[2], kPaths[1], kPaths[0]}));
  CHECK(seg->unlearned == 0);
}

TEST_CASE("paths that are not files of the dataset are counted, never resolved", "[report]") {
  Store s;
  auto c = s.orders.Connect();
  // etc/passwd is a file of the dataset; /etc/passwd is not a relative path.
  Send(c.get(),
       MainHello(5) + TablePathsFrame(3, 0,
                                      {"../x", "/etc/passwd", "train", "missing.jpg",
                                       "train/cat/1.jpg", "train/../val/4.jpg", "./val/4.jpg",
                                       "train//cat/1.jpg", "", "etc/passwd"}));
  Send(c.get(), TableFilesFrame(3, {{0, {"/etc/passwd", "train/cat"}}}));
  Send(c.get(), OrderFrame(3, 0, 0, true, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
  auto seg = s.orders.Segment(5, 0);
  REQUIRE(seg.ok());
  CHECK(seg->files == s.Nodes({"train/cat/1.jpg", "etc/passwd"}));
  CHECK(seg->unresolved == 9);  // 8 bad paths and index 10, past the table
  CHECK(seg->unlearned == 1);   // index 10: no path, nothing learned
  CHECK(s.Stats().find("\"unresolved_paths\":10") != std::string::npos);
}

TEST_CASE("only the latest 16 segments of a process are kept", "[report]") {
  Store s;
  auto c = s.orders.Connect();
  Send(c.get(), MainHello(9) + TablePathsFrame(1, 0, kPaths));
  uint64_t memory_at_16 = 0;
  for (uint32_t e = 0; e < 20; ++e) {
    Send(c.get(), OrderFrame(1, 0, e, true, {e % 4, 3}));
    if (e == 15) memory_at_16 = s.orders.memory_bytes();
  }
  CHECK(s.orders.memory_bytes() == memory_at_16);  // dropping frees what it held
  CHECK(s.orders.SegmentCount(9) == 20);
  CHECK(s.orders.Segment(9, 20).status().IsUnavailable());
  CHECK(s.orders.Segment(9, 1000).status().IsUnavailable());
  CHECK(s.orders.Segment(9, 3).status().IsNotFound());
  CHECK(s.orders.Segment(9, 0).status().IsNotFound());
  for (uint32_t seq = 4; seq < 20; ++seq) {
    auto seg = s.orders.Segment(9, seq);
    REQUIRE(seg.ok());
    CHECK(seg->epoch == seq);
    CHECK(seg->files == s.Nodes({kPaths[seq % 4], kPaths[3]}));
  }
  CHECK(s.orders.Segment(12345, 0).status().IsUnavailable());  // an unknown process
  CHECK(s.orders.SegmentCount(12345) == 0);
}

TEST_CASE("processes are listed in the order of their first complete segment", "[report]") {
  Store s;
  auto a = s.orders.Connect();
  auto b = s.orders.Connect();
  auto idle = s.orders.Connect();
  Send(a.get(), MainHello(1) + OrderFrame(1, 0, 0, false, {0}));
  Send(b.get(), MainHello(2) + OrderFrame(1, 0, 0, true, {0}));
  Send(idle.get(), MainHello(3));
  Send(a.get(), OrderFrame(1, 0, 0, true, {}));
  Send(b.get(), OrderFrame(1, 0, 1, true, {0}));
  CHECK(s.orders.Processes() == std::vector<uint64_t>{2, 1});
  CHECK(s.orders.Info(3).has_value());
  CHECK(s.orders.Segment(1, 0)->stream == 0);
}

TEST_CASE("the listener hears every completed segment, without the lock", "[report]") {
  Store s;
  std::vector<uint64_t> heard;
  s.orders.SetListener([&] {
    for (uint64_t pid : s.orders.Processes()) heard.push_back(s.orders.SegmentCount(pid));
  });
  auto c = s.orders.Connect();
  Send(c.get(), MainHello(4) + OrderFrame(1, 0, 0, false, {0}));
  CHECK(heard.empty());
  Send(c.get(), OrderFrame(1, 0, 0, true, {0}) + OrderFrame(1, 0, 1, true, {}));
  CHECK(heard == std::vector<uint64_t>{1, 2});
}

TEST_CASE("the report memory bound refuses frames past it and keeps what came before", "[report]") {
  ReportLimits limits;
  limits.memory_bytes = 4096;
  Store s(limits);
  auto c = s.orders.Connect();
  Send(c.get(), MainHello(1) + TablePathsFrame(1, 0, kPaths) + OrderFrame(1, 0, 0, true, {0, 1}));
  const uint64_t held = s.orders.memory_bytes();
  CHECK(held > 4 * 4);
  CHECK(held <= limits.memory_bytes);
  // 2000 indices need 8000 bytes.
  const std::string big = OrderFrame(1, 0, 1, true, std::vector<uint32_t>(2000, 1));
  const Status st = c->Feed(big.data(), big.size());
  CHECK(st.code() == Code::kNoSpace);
  CHECK(st.message().find("report memory full") != std::string::npos);
  CHECK(s.orders.memory_bytes() <= limits.memory_bytes);
  c->Close(st);
  c.reset();  // its segment in progress is released
  CHECK(s.orders.memory_bytes() == held);
  CHECK(s.orders.SegmentCount(1) == 1);
  CHECK(s.orders.Segment(1, 0)->files == s.Nodes({kPaths[0], kPaths[1]}));
  const std::string stats = s.Stats();
  CHECK(stats.find("\"memory_refusals\":1") != std::string::npos);
  CHECK(stats.find("\"memory_limit\":4096") != std::string::npos);
  // A table that would not fit is refused too.
  auto d = s.orders.Connect();
  std::vector<std::string> many(1200, kPaths[0]);
  const std::string table = MainHello(2) + TablePathsFrame(2, 0, many);
  CHECK(d->Feed(table.data(), table.size()).code() == Code::kNoSpace);
  CHECK(s.orders.memory_bytes() <= limits.memory_bytes);
}

TEST_CASE("a segment in progress is charged and let go with its connection", "[report]") {
  Store s;
  auto c = s.orders.Connect();
  Send(c.get(), MainHello(1));
  const uint64_t before = s.orders.memory_bytes();
  Send(c.get(), OrderFrame(1, 0, 0, false, std::vector<uint32_t>(1000, 2)));
  CHECK(s.orders.memory_bytes() >= before + 4000);
  c.reset();
  CHECK(s.orders.memory_bytes() == before);
  CHECK(s.orders.SegmentCount(1) == 0);
  CHECK(s.Stats().find("\"connections_open\":0") != std::string::npos);
}

}  // namespace
}  // namespace clairfs::fs
