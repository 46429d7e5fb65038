// ReportDecoder: every frame type, any split of the byte stream, each broken
// rule with its message, and the frame limit.
#include "fs/report/report_decoder.hpp"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "tests/fs/report/report_frames.hpp"

namespace clairfs::fs {
namespace {

using namespace testing;

std::string Join(const PathList& paths) {
  std::string out;
  for (std::string_view p : paths) out += "[" + std::string(p) + "]";
  return out;
}

// Writes each message as one line of text.
struct Recorder : ReportSink {
  Status OnHello(const ReportHello& m) override {
    lines.push_back("HELLO v" + std::to_string(m.version) + " " + m.role + " pid " +
                    std::to_string(m.pid) + " rank " + std::to_string(m.rank) + "/" +
                    std::to_string(m.world_size) + " local " + std::to_string(m.local_rank) + "/" +
                    std::to_string(m.local_size) + " " + m.framework);
    return next;
  }
  Status OnTablePaths(const ReportTablePaths& m) override {
    lines.push_back("PATHS " + std::to_string(m.table) + " from " + std::to_string(m.first) + " n" +
                    std::to_string(m.paths.size()) + " " + Join(m.paths));
    return next;
  }
  Status OnTableFiles(const ReportTableFiles& m) override {
    std::string line = "FILES " + std::to_string(m.table) + " n" + std::to_string(m.records.size());
    for (const ReportFileRecord& r : m.records) {
      line += " " + std::to_string(r.index) + ":" + std::to_string(r.paths.size()) + Join(r.paths);
    }
    lines.push_back(line);
    return next;
  }
  Status OnAlias(const ReportAlias& m) override {
    lines.push_back("ALIAS " + std::to_string(m.alias) + " -> " + std::to_string(m.table));
    return next;
  }
  Status OnOrder(const ReportOrder& m) override {
    std::string line = std::string(m.guess ? "GUESS " : "ORDER ") + std::to_string(m.table) + " s" +
                       std::to_string(m.stream) + " e" + std::to_string(m.epoch) +
                       (m.last ? " last" : "");
    for (uint32_t i : m.indices.ToVector()) line += " " + std::to_string(i);
    lines.push_back(line);
    return next;
  }
  Status OnLoader(const ReportLoader& m) override {
    lines.push_back("LOADER s" + std::to_string(m.stream) + " b" + std::to_string(m.batch_size) +
                    " w" + std::to_string(m.num_workers) + " f" +
                    std::to_string(m.prefetch_factor));
    return next;
  }
  Status OnSettings(const ReportSettings& m) override {
    std::string line = "SETTINGS s" + std::to_string(m.stream);
    for (const auto& [k, v] : m.values) line += " " + std::string(k) + "=" + std::string(v);
    lines.push_back(line);
    return next;
  }
  Status OnEpoch(const ReportEpoch& m) override {
    lines.push_back("EPOCH s" + std::to_string(m.stream) + " e" + std::to_string(m.epoch));
    return next;
  }
  std::vector<std::string> lines;
  Status next;
};

std::string AllTypes() {
  return MainHello(4242, 3) + TablePathsFrame(7, 0, {"train/cat/1.jpg", "", "b\xff"}) +
         TablePathsFrame(7, 3, {}) +
         TableFilesFrame(0xfeedfacecafebeefULL, {{5, {"x", "y/z"}}, {6, {}}, {0xffffffff, {"w"}}}) +
         AliasFrame(0xfeedfacecafebeefULL, 7) +
         LoaderFrame(1, "num_workers=8\nbatch_size=256\nlater=x\n") +
         OrderFrame(7, 1, 2, false, {3, 0, 0xffffffff}) + OrderFrame(7, 1, 2, true, {}) +
         SettingsFrame(3, "sampler=keras\nroot=\nseed=7\n\nclass-names=a,b=c\n") +
         EpochFrame(3, 0xffffffffffffffffULL) + GuessFrame(7, 1, 3, true, {2, 1});
}

const std::vector<std::string> kAllTypes = {
    "HELLO v1 main pid 4242 rank 3/4 local 1/2 torch",
    "PATHS 7 from 0 n3 [train/cat/1.jpg][][b\xff]",
    "PATHS 7 from 3 n0 ",
    "FILES 18369614221190020847 n3 5:2[x][y/z] 6:0 4294967295:1[w]",
    "ALIAS 18369614221190020847 -> 7",
    "LOADER s1 b256 w8 f-1",
    "ORDER 7 s1 e2 3 0 4294967295",
    "ORDER 7 s1 e2 last",
    "SETTINGS s3 sampler=keras root= seed=7 class-names=a,b=c",
    "EPOCH s3 e18446744073709551615",
    "GUESS 7 s1 e3 last 2 1",
};

TEST_CASE("the report decoder decodes every frame type", "[report]") {
  ReportDecoder d;
  Recorder r;
  REQUIRE(d.Feed(AllTypes().data(), AllTypes().size(), &r).ok());
  CHECK(r.lines == kAllTypes);
  CHECK(d.frames() == 11);
  CHECK(d.buffered() == 0);
}

TEST_CASE("the report decoder takes a HELLO's keys in any order, absent ones -1", "[report]") {
  ReportDecoder d;
  Recorder r;
  const std::string hello = HelloFrame("colour=blue\n\nrole=worker\nversion=1\nfuture=x=y");
  REQUIRE(d.Feed(hello.data(), hello.size(), &r).ok());
  CHECK(r.lines == std::vector<std::string>{"HELLO v1 worker pid -1 rank -1/-1 local -1/-1 "});
}

TEST_CASE("the report decoder gives the same messages however the bytes are split", "[report]") {
  const std::string all = AllTypes();
  for (size_t cut = 0; cut <= all.size(); ++cut) {  // two chunks, cut anywhere
    ReportDecoder d;
    Recorder r;
    REQUIRE(d.Feed(all.data(), cut, &r).ok());
    REQUIRE(d.Feed(all.data() + cut, all.size() - cut, &r).ok());
    REQUIRE(r.lines == kAllTypes);
  }
  for (size_t chunk : {1, 2, 3, 5, 7, 13}) {  // many small chunks
    ReportDecoder d;
    Recorder r;
    for (size_t at = 0; at < all.size(); at += chunk) {
      REQUIRE(d.Feed(all.data() + at, std::min(chunk, all.size() - at), &r).ok());
    }
    REQUIRE(r.lines == kAllTypes);
  }
}

struct Broken {
  std::string bytes;
  std::string message;
};

TEST_CASE("the report decoder names each broken rule and stops there", "[report]") {
  const std::string hello = MainHello(1);
  std::string header_only;
  PutLE<uint32_t>(&header_only, 20000000);
  std::string empty;
  PutLE<uint32_t>(&empty, 0);
  std::string paths_short, files_short, files_past, alias_short, alias_long, order_odd, order_last;
  paths_short = Frame(2, std::string(11, '\0'));
  std::string unterminated;
  PutLE<uint64_t>(&unterminated, 1);
  PutLE<uint32_t>(&unterminated, 0);
  unterminated += "a.jpg";  // no NUL
  std::string records;
  PutLE<uint64_t>(&records, 1);
  PutLE<uint32_t>(&records, 4);
  files_short = Frame(3, records);  // a record cut after its index
  PutLE<uint32_t>(&records, 3);
  files_past = Frame(3, records + PathsBody({"a", "b"}));  // 3 paths announced, 2 sent
  std::string ids(16, '\0');
  alias_short = Frame(4, ids.substr(0, 15));
  alias_long = Frame(4, ids + "x");
  std::string order(25, '\0');
  order_odd = Frame(5, order + "abc");
  order[24] = 2;
  order_last = Frame(5, order);
  std::string many_keys;
  for (int i = 0; i <= 64; ++i) many_keys += "k" + std::to_string(i) + "=v\n";
  std::string past;
  PutLE<uint64_t>(&past, 1);
  PutLE<uint32_t>(&past, 0xffffffff);
  const std::vector<Broken> cases = {
      {TablePathsFrame(1, 0, {"a"}), "frame 1: HELLO must be the first frame"},
      {hello + AliasFrame(1, 2) + MainHello(2), "frame 3: HELLO must be the first frame"},
      {HelloFrame("version=2\n"), "frame 1: unsupported version 2"},
      {HelloFrame("role=main\npid=3\n"), "frame 1: HELLO without version"},
      {HelloFrame("version=1\npid=12x\n"), "frame 1: HELLO pid is not a number"},
      {HelloFrame("version=1\nrank=\n"), "frame 1: HELLO rank is not a number"},
      {HelloFrame("version=1\nno equals sign\n"), "frame 1: HELLO line without '='"},
      {hello + Frame(10, "abc"), "frame 2: unknown frame type 10"},
      {hello + Frame(0, ""), "frame 2: unknown frame type 0"},
      {hello + empty, "frame 2: empty payload"},
      {hello + header_only, "frame 2: payload of 20000000 bytes exceeds 16 MiB"},
      {hello + AliasFrame(1, 2) + paths_short, "frame 3: TABLE_PATHS body truncated"},
      {hello + Frame(2, unterminated), "frame 2: TABLE_PATHS body truncated"},
      {hello + Frame(2, past + PathsBody({"a", "b"})), "frame 2: TABLE_PATHS entries past"},
      {hello + Frame(3, "1234567"), "frame 2: TABLE_FILES body truncated"},
      {hello + files_short, "frame 2: TABLE_FILES body truncated"},
      {hello + files_past, "frame 2: TABLE_FILES record of index 4: count 3 runs past the body"},
      {hello + alias_short, "frame 2: ALIAS body truncated"},
      {hello + alias_long, "frame 2: ALIAS body has 1 extra bytes"},
      {hello + order_odd, "frame 2: ORDER body truncated"},
      {hello + Frame(5, order.substr(0, 24)), "frame 2: ORDER body truncated"},
      {hello + order_last, "frame 2: ORDER last is 2, not 0 or 1"},
      {hello + Frame(6, "1234567"), "frame 2: LOADER body truncated"},
      {hello + LoaderFrame(1, "batch_size=big\n"), "frame 2: LOADER batch_size is not a number"},
      {hello + LoaderFrame(1, "workers\n"), "frame 2: LOADER line without '='"},
      {hello + Frame(7, "1234567"), "frame 2: SETTINGS body truncated"},
      {hello + SettingsFrame(1, "seed=1\nseed=2\n"), "frame 2: SETTINGS key seed given twice"},
      {hello + SettingsFrame(1, many_keys), "frame 2: SETTINGS has more than 64 keys"},
      {hello + SettingsFrame(1, "sampler\n"), "frame 2: SETTINGS line without '='"},
      {hello + Frame(8, std::string(15, '\0')), "frame 2: EPOCH body truncated"},
      {hello + Frame(8, std::string(17, '\0')), "frame 2: EPOCH body has 1 extra bytes"},
  };
  for (const Broken& c : cases) {
    INFO(c.message);
    ReportDecoder d;
    Recorder r;
    const Status st = d.Feed(c.bytes.data(), c.bytes.size(), &r);
    REQUIRE_FALSE(st.ok());
    CHECK(st.IsCorruption());
    CHECK(st.message().find(c.message) != std::string::npos);
    // Frames before the broken one were delivered; nothing after.
    const size_t frame = static_cast<size_t>(c.message[6] - '0');
    CHECK(r.lines.size() == frame - 1);
    CHECK(d.frames() == frame - 1);
    // The error is final, whatever comes next.
    const Status again = d.Feed(hello.data(), hello.size(), &r);
    CHECK(again.message() == st.message());
    CHECK(r.lines.size() == frame - 1);
  }
}

TEST_CASE("the report decoder refuses a long frame before buffering it", "[report]") {
  ReportDecoder d(100);
  Recorder r;
  const std::string hello = HelloFrame("version=1\n" + std::string(87, '#') + "=\n");
  REQUIRE(hello.size() == 4 + 100);  // exactly the limit
  REQUIRE(d.Feed(hello.data(), hello.size(), &r).ok());
  const std::string order = OrderFrame(1, 0, 0, true, std::vector<uint32_t>(18));  // 98 bytes
  REQUIRE(d.Feed(order.data(), order.size(), &r).ok());
  CHECK(r.lines.size() == 2);
  std::string over;
  PutLE<uint32_t>(&over, 101);
  const Status st = d.Feed(over.data(), over.size(), &r);  // the length alone is refused
  CHECK(st.message() == "frame 3: payload of 101 bytes exceeds 100 bytes");
  CHECK(d.buffered() == 0);
}

TEST_CASE("the report decoder holds what arrived of a frame, not what it announced", "[report]") {
  ReportDecoder d;
  Recorder r;
  const std::string hello = MainHello(1);
  REQUIRE(d.Feed(hello.data(), hello.size(), &r).ok());
  std::string header;
  PutLE<uint32_t>(&header, 16u << 20);  // 16 MiB announced, at the limit
  header += "\x05";
  REQUIRE(d.Feed(header.data(), header.size(), &r).ok());
  CHECK(d.buffered() == 5);
  const std::string some(1000, '\0');
  REQUIRE(d.Feed(some.data(), some.size(), &r).ok());
  CHECK(d.buffered() == 1005);
  CHECK(r.lines.size() == 1);
}

TEST_CASE("the report decoder stops at a sink's refusal, with its code", "[report]") {
  ReportDecoder d;
  Recorder r;
  const std::string all = AllTypes();
  r.next = Status::NoSpace("report memory full");
  const Status st = d.Feed(all.data(), all.size(), &r);
  CHECK(st.code() == Code::kNoSpace);
  CHECK(st.message() == "frame 1: report memory full");
  CHECK(r.lines.size() == 1);
  CHECK(d.frames() == 0);
}

}  // namespace
}  // namespace clairfs::fs
