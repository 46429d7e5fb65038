// Scanner, packer options, argument parsing and JSON output, without the CLI.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "base/json.hpp"
#include "partitioner/format/manifest.hpp"
#include "partitioner/pack/memory_limit.hpp"
#include "partitioner/pack/packer.hpp"
#include "partitioner/pack/progress.hpp"
#include "partitioner/pack/scan.hpp"
#include "partitioner/pack/verify.hpp"
#include "tests/support/stderr_capture.hpp"

namespace fs = std::filesystem;
using namespace clairfs;

namespace {

struct TempDir {
  TempDir() {
    std::string t = (fs::temp_directory_path() / "clairfs-pack-test.XXXXXX").string();
    path = ::mkdtemp(t.data());
  }
  ~TempDir() { fs::remove_all(path); }
  void Write(const std::string& rel, const std::string& data) const {
    fs::create_directories((fs::path(path) / rel).parent_path());
    std::ofstream(fs::path(path) / rel, std::ios::binary) << data;
  }
  std::string path;
};

}  // namespace

TEST_CASE("scan lists breadth-first with sorted siblings", "[scan]") {
  TempDir t;
  t.Write("src/b/sub-2/x", "1");
  t.Write("src/b/sub/deeper/y", "22");
  t.Write("src/a", "333");
  t.Write("src/B", "");
  fs::create_directories(t.path + "/src/empty");
  auto r = pack::ScanTree(t.path + "/src");
  REQUIRE(r.ok());
  std::vector<std::string> paths;
  for (uint32_t i = 0; i < r->entries.size(); ++i) paths.push_back(pack::EntryPath(r->entries, i));
  CHECK(paths == std::vector<std::string>{"", "B", "a", "b", "empty", "b/sub", "b/sub-2",
                                          "b/sub/deeper", "b/sub-2/x", "b/sub/deeper/y"});
  CHECK(r->file_count == 4);
  CHECK(r->total_bytes == 6);
  CHECK(r->entries[3].first_child == 5);
  CHECK(r->entries[3].child_count == 2);
  CHECK(r->entries[4].child_count == 0);
}

TEST_CASE("scan follows links inside the tree and refuses the others", "[scan]") {
  TempDir t;
  t.Write("src/d/f", "content");
  fs::create_symlink("d/f", t.path + "/src/inside");
  auto ok = pack::ScanTree(t.path + "/src");
  REQUIRE(ok.ok());
  const auto& e = ok->entries;
  auto it = std::find_if(e.begin(), e.end(), [](auto& x) { return x.name == "inside"; });
  REQUIRE(it != e.end());
  CHECK(it->size == 7);
  CHECK(S_ISREG(it->mode));

  fs::create_symlink("/", t.path + "/src/escape");
  fs::create_symlink("..", t.path + "/src/d/loop");
  auto bad = pack::ScanTree(t.path + "/src");
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.status().message(), Catch::Contains("escape: symlink escapes"));
  CHECK_THAT(bad.status().message(), Catch::Contains("d/loop: symlink loops"));
}

TEST_CASE("scan of a missing or non-directory source", "[scan]") {
  TempDir t;
  t.Write("file", "x");
  CHECK(pack::ScanTree(t.path + "/missing").status().IsNotFound());
  CHECK_FALSE(pack::ScanTree(t.path + "/file").ok());
}

TEST_CASE("Printable escapes control and non-UTF-8 bytes only", "[scan]") {
  CHECK(pack::Printable("café ☕") == "café ☕");
  CHECK(pack::Printable("a\nb") == "a\\x0ab");
  CHECK(pack::Printable("\xe9t\xe9") == "\\xe9t\\xe9");
  CHECK(pack::Printable("back\\slash") == "back\\\\slash");
}

TEST_CASE("pack writes a manifest that maps every file", "[pack]") {
  TempDir t;
  t.Write("src/x/1.jpg", std::string(3000, 'a'));
  t.Write("src/x/2.jpg", "tiny");
  t.Write("src/val/3.jpg", std::string(100, 'b'));
  pack::PackOptions o;
  o.src = t.path + "/src";
  o.out = t.path + "/out";
  o.partitions = 2;
  o.threads = 3;
  o.broadcast = {"val"};
  auto r = pack::Pack(o);
  REQUIRE(r.ok());
  CHECK(r->files == 3);
  CHECK(r->broadcast_files == 1);
  auto m = format::Manifest::Load(o.out);
  REQUIRE(m.ok());
  auto val = (*m)->Resolve("val/3.jpg");
  REQUIRE(val.ok());
  CHECK((*m)->node(*val).partition == 2);  // the broadcast pack
  CHECK((*m)->node(*val).flags & format::kNodeFlagBroadcast);
  CHECK((*m)->node(*(*m)->Resolve("x/1.jpg")).codec == static_cast<uint8_t>(format::Codec::kZstd));
  CHECK((*m)->node(*(*m)->Resolve("x/2.jpg")).codec == static_cast<uint8_t>(format::Codec::kRaw));

  o.force = false;
  CHECK(pack::Pack(o).status().code() == Code::kAlreadyExists);
  o.partitions = 0;
  CHECK(pack::Pack(o).status().code() == Code::kInvalidArgument);
}

namespace {

// Bytes that do not compress (so every frame is stored raw), from a seed.
std::string Noise(size_t n, uint32_t seed) {
  std::string s(n, '\0');
  for (char& c : s) {
    seed = seed * 1664525u + 1013904223u;
    c = static_cast<char>(seed >> 24);
  }
  return s;
}

}  // namespace

TEST_CASE("pack holds files within its memory budget, a larger file alone", "[pack]") {
  constexpr uint64_t kSmall = 128 << 10, kLarge = 3 << 20;
  // The budget's count for one file: the file and its payload, plus the frame table.
  auto count = [](uint64_t size) { return 2 * size + size / 256 + 64; };
  TempDir t;
  for (int i = 0; i < 12; ++i) {
    t.Write("src/d" + std::to_string(i % 3) + "/" + std::to_string(i), Noise(kSmall, i));
  }
  pack::PackOptions o;
  o.src = t.path + "/src";
  o.out = t.path + "/out";
  o.partitions = 2;
  o.threads = 6;
  o.frame_size = 64 << 10;  // every file framed: a payload as large as its file
  o.memory = 1 << 20;       // room for 3 of the small files, not 4
  auto r = pack::Pack(o);
  REQUIRE(r.ok());
  CHECK(r->peak_memory >= count(kSmall));
  CHECK(r->peak_memory <= o.memory);

  t.Write("src/big", Noise(kLarge, 99));
  o.force = true;
  r = pack::Pack(o);
  REQUIRE(r.ok());
  CHECK(r->files == 13);
  // Counted alone: with any small file beside it the peak would be larger.
  CHECK(r->peak_memory == count(kLarge));

  pack::VerifyOptions v;
  v.out = o.out;
  v.src = o.src;
  auto report = pack::Verify(v);
  REQUIRE(report.ok());
  CHECK(report->differences.empty());
  CHECK(report->files == 13);

  o.memory = (1 << 20) - 1;
  CHECK(pack::Pack(o).status().code() == Code::kInvalidArgument);
}

TEST_CASE("progress goes to a log as plain lines when stderr is not a terminal", "[pack]") {
  const std::string text = clairfs::testing::CaptureStderr([] {
    {
      pack::Progress p("packing", 10, 4096, true, std::chrono::milliseconds(20));
      p.Add(5, 2048);
      // At least one line (every 20 ms), however slowly this machine runs.
      for (int i = 0; i < 500 && ::lseek(STDERR_FILENO, 0, SEEK_END) == 0; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      p.Stop();
    }
    pack::Progress quiet("packing", 10, 4096, false, std::chrono::milliseconds(20));
    quiet.Add(10, 4096);
    std::this_thread::sleep_for(std::chrono::milliseconds(60));
  });
  CHECK(text.find('\r') == std::string::npos);
  CHECK(text.find('\033') == std::string::npos);
  CHECK(text.find("packing  50%  5/10 files  2.0 KiB/4.0 KiB") != std::string::npos);
  CHECK(text.find("10/10 files") == std::string::npos);  // the disabled one printed nothing
  REQUIRE(!text.empty());
  CHECK(text.back() == '\n');
}

TEST_CASE("the cgroup memory limit is the smallest on the way up, v1 or v2", "[pack]") {
  TempDir t;
  // v1 beside v2 at ROOT/unified: the memory controller's limits at two levels.
  t.Write("v1/cgroup", "12:pids:/job\n4:cpu,memory:/slurm/job_7/step_0\n0::/user.slice\n");
  t.Write("root/memory/memory.limit_in_bytes", "9223372036854771712\n");
  t.Write("root/memory/slurm/memory.limit_in_bytes", "8589934592\n");
  t.Write("root/memory/slurm/job_7/memory.limit_in_bytes", "4294967296\n");
  t.Write("root/memory/slurm/job_7/step_0/memory.limit_in_bytes", "9223372036854771712\n");
  t.Write("root/unified/cgroup.controllers", "");
  t.Write("root/unified/user.slice/memory.max", "max\n");
  CHECK(pack::CgroupMemoryLimit(t.path + "/v1/cgroup", t.path + "/root") == 4294967296u);
  // v2 alone at ROOT, a limit above and "max" below.
  t.Write("v2/cgroup", "0::/a/b\n");
  t.Write("r2/cgroup.controllers", "memory");
  t.Write("r2/a/memory.max", "1073741824\n");
  t.Write("r2/a/b/memory.max", "max\n");
  CHECK(pack::CgroupMemoryLimit(t.path + "/v2/cgroup", t.path + "/r2") == 1073741824u);
  // Nothing readable: no limit.
  CHECK(pack::CgroupMemoryLimit(t.path + "/missing", t.path + "/r2") == UINT64_MAX);
  t.Write("r3/cgroup.controllers", "");
  CHECK(pack::CgroupMemoryLimit(t.path + "/v2/cgroup", t.path + "/r3") == UINT64_MAX);
}

TEST_CASE("compression spec parsing", "[pack]") {
  CHECK(*pack::ParseCompression("none") == 0);
  CHECK(*pack::ParseCompression("zstd") == 3);
  CHECK(*pack::ParseCompression("zstd:19") == 19);
  CHECK_FALSE(pack::ParseCompression("zstd:0").ok());
  CHECK_FALSE(pack::ParseCompression("zstd:x").ok());
  CHECK_FALSE(pack::ParseCompression("gzip").ok());
}

TEST_CASE("JSON strings are always valid", "[json]") {
  std::string s;
  clairfs::AppendJsonString(&s,
                            "a\"b\\c\n\x01\xff"
                            "é");
  CHECK(s ==
        "\"a\\\"b\\\\c\\u000a\\u0001\xef\xbf\xbd"
        "é\"");
  clairfs::JsonWriter w;
  w.BeginObject()
      .Integer("n", 3)
      .BeginArray("xs")
      .String("", "a")
      .String("", "b")
      .EndArray()
      .Number("r", 1.5)
      .EndObject();
  CHECK(w.str() == "{\"n\":3,\"xs\":[\"a\",\"b\"],\"r\":1.5}");
}

TEST_CASE("JSON for people: members on their own lines down to a depth", "[json]") {
  clairfs::JsonWriter w(1);
  w.BeginObject()
      .Null("p")
      .BeginObject("o")
      .Integer("a", 1)
      .Bool("b", true)
      .EndObject()
      .BeginArray("e")
      .EndArray()
      .Number("t", 12345.678)
      .EndObject();
  CHECK(w.str() ==
        "{\n  \"p\": null,\n  \"o\": {\"a\": 1, \"b\": true},\n  \"e\": [],\n"
        "  \"t\": 12345.678\n}");
}
