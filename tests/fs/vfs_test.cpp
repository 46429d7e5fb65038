// The core without FUSE: namespace, reads at any offset, errno values,
// corruption, control files, and the posix pack store.
#include "fs/vfs/vfs.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <random>

#include "fs/cache/cache_policy.hpp"
#include "fs/store/memory_pack_store.hpp"
#include "fs/store/pack_readahead.hpp"
#include "fs/store/posix_pack_store.hpp"
#include "partitioner/format/manifest.hpp"
#include "tests/support/format_fixture.hpp"
#include "tests/support/memory_dataset.hpp"

namespace clairfs::fs {
namespace {

namespace ft = format::testing;

const char kDeep[] =
    "d\xc3\xa9"
    "ep";  // "dép": a UTF-8 name

// Every codec: raw, zstd, framed (zstd and raw frames), empty, broadcast, two
// partitions, deep nesting, an empty directory, a name with a space.
ft::DatasetSpec TrickySpec() {
  ft::DatasetSpec spec;
  spec.partition_count = 2;
  spec.encode.frame_size = 512;
  spec.files = {
      {"raw.bin", ft::RandomBytes(500, 1), 0},  // under one frame: kRaw
      {"docs/text file.txt", ft::TextBytes(500, 2), 0},
      {"docs/framed.dat", ft::MixedFrames(2700, 512, 3), 0},
      {"docs/empty", {}, 0},
      {"docs/big.txt", ft::TextBytes(5000, 9), 1},
      {"p1/small", ft::RandomBytes(200, 4), 1},
      {"bcast.txt", ft::TextBytes(300, 5), 2},
      {std::string(kDeep) + "/a/b/c/leaf", ft::RandomBytes(33, 10), 0, 0100600},
  };
  spec.empty_dirs.push_back("nothing here");
  return spec;
}

std::string Bytes(const ReadData& d) {
  std::string out;
  for (const ReadSlice& s : d.slices) out.append(s.data, s.size);
  return out;
}

std::string Str(const std::vector<char>& v) { return std::string(v.begin(), v.end()); }

// A Vfs over an in-memory dataset.
struct Fixture : MemoryDataset {
  explicit Fixture(uint64_t cache_bytes = 1 << 20, ft::DatasetSpec spec = TrickySpec(),
                   std::string report_text = {})
      : MemoryDataset(spec) {
    cache = std::make_unique<RamCache>(cache_bytes, std::make_unique<LruPolicy>());
    VfsOptions o;
    o.decline_open = false;
    o.uid = 1234;
    o.config_text = "ram_cache: 1\n";
    o.report_text = std::move(report_text);
    vfs = std::make_unique<Vfs>(manifest, source.get(), cache.get(), &stats, o);
  }
  uint64_t Ino(const std::string& path) {
    auto n = manifest->Resolve(path);
    REQUIRE(n.ok());
    return uint64_t{*n} + 1;
  }
  std::unique_ptr<RamCache> cache;
  Stats stats;
  std::unique_ptr<Vfs> vfs;
};

TEST_CASE("lookup and getattr follow the manifest", "[vfs]") {
  Fixture f;
  auto docs = f.vfs->Lookup(1, "docs");
  REQUIRE(docs.ok());
  CHECK(S_ISDIR(docs->mode));
  CHECK(docs->nlink == 2);
  auto text = f.vfs->Lookup(docs->ino, "text file.txt");
  REQUIRE(text.ok());
  CHECK(S_ISREG(text->mode));
  CHECK((text->mode & 07777) == 0644);
  CHECK(text->size == 500);
  CHECK(text->mtime_ns == ft::kBaseMtimeNs);
  CHECK(text->uid == 1234);
  auto leaf = f.vfs->GetAttr(f.Ino(std::string(kDeep) + "/a/b/c/leaf"));
  REQUIRE(leaf.ok());
  CHECK((leaf->mode & 07777) == 0600);
  auto root = f.vfs->GetAttr(1);
  REQUIRE(root.ok());
  CHECK(root->nlink == 2 + 4);  // docs, dép, nothing here, p1

  CHECK(f.vfs->Lookup(1, "nope").status().err() == ENOENT);
  CHECK(f.vfs->Lookup(text->ino, "x").status().err() == ENOTDIR);
  CHECK(f.vfs->GetAttr(999999).status().err() == ENOENT);
}

TEST_CASE("readdir lists exactly the children, resumable at any offset", "[vfs]") {
  Fixture f;
  std::vector<std::string> names;
  std::vector<uint64_t> offsets;
  REQUIRE(f.vfs
              ->ReadDir(f.Ino("docs"), 0,
                        [&](std::string_view n, const Attr&, uint64_t off) {
                          names.emplace_back(n);
                          offsets.push_back(off);
                          return true;
                        })
              .ok());
  CHECK(names ==
        std::vector<std::string>{".", "..", "big.txt", "empty", "framed.dat", "text file.txt"});
  // Stop after two entries, resume from the last offset handed out.
  std::vector<std::string> first, rest;
  uint64_t resume = 0;
  REQUIRE(f.vfs
              ->ReadDir(1, 0,
                        [&](std::string_view n, const Attr&, uint64_t off) {
                          if (first.size() == 2) return false;
                          first.emplace_back(n);
                          resume = off;
                          return true;
                        })
              .ok());
  REQUIRE(f.vfs
              ->ReadDir(1, resume,
                        [&](std::string_view n, const Attr&, uint64_t) {
                          rest.emplace_back(n);
                          return true;
                        })
              .ok());
  CHECK(first == std::vector<std::string>{".", ".."});
  CHECK(rest ==
        std::vector<std::string>{"bcast.txt", "docs", kDeep, "nothing here", "p1", "raw.bin"});
  auto empty = f.vfs->Lookup(1, "nothing here");
  REQUIRE(empty.ok());
  int count = 0;
  REQUIRE(f.vfs
              ->ReadDir(empty->ino, 0,
                        [&](std::string_view, const Attr&, uint64_t) {
                          ++count;
                          return true;
                        })
              .ok());
  CHECK(count == 2);
  CHECK(f.vfs->ReadDir(f.Ino("raw.bin"), 0, [](auto, auto&, auto) { return true; }).err() ==
        ENOTDIR);
}

TEST_CASE("reads at any offset and size return the original bytes", "[vfs]") {
  Fixture f;
  CHECK(f.dataset.codecs["raw.bin"] == format::Codec::kRaw);
  CHECK(f.dataset.codecs["docs/text file.txt"] == format::Codec::kZstd);
  CHECK(f.dataset.codecs["docs/framed.dat"] == format::Codec::kFramed);
  CHECK(f.dataset.codecs["docs/big.txt"] == format::Codec::kFramed);
  std::mt19937 rng(3);
  for (const auto& [path, content] : f.dataset.contents) {
    const uint64_t ino = f.Ino(path);
    auto whole = f.vfs->Read(ino, 0, content.size() + 100);
    REQUIRE(whole.ok());
    CHECK(Bytes(*whole) == Str(content));
    for (int i = 0; i < 200; ++i) {
      const uint64_t off = rng() % (content.size() + 10);
      const size_t len = rng() % 1500;
      auto part = f.vfs->Read(ino, off, len);
      REQUIRE(part.ok());
      const std::string want = off >= content.size() ? "" : Str(content).substr(off, len);
      INFO(path << " off " << off << " len " << len);
      CHECK(Bytes(*part) == want);
    }
  }
  CHECK(f.stats.reads_from_ram > 0);
  CHECK(f.stats.corruption_errors == 0);
}

TEST_CASE("ReadIfReady answers only what needs no load, with Read's bytes", "[vfs]") {
  Fixture f;
  std::mt19937 rng(5);
  for (const auto& [path, content] : f.dataset.contents) {
    const uint64_t ino = f.Ino(path);
    for (int i = 0; i < 50; ++i) {
      const uint64_t off = rng() % (content.size() + 10);
      const size_t len = 1 + rng() % 1500;
      INFO(path << " off " << off << " len " << len);
      const uint64_t loads = f.stats.pack_block_loads;
      auto ready = f.vfs->ReadIfReady(ino, off, len);
      CHECK(f.stats.pack_block_loads == loads);  // never loads
      auto read = f.vfs->Read(ino, off, len);
      REQUIRE(read.ok());
      if (ready) {
        REQUIRE(ready->ok());
        CHECK(Bytes(**ready) == Bytes(*read));
      } else {
        // Not ready: Read had to load a block this range touches; now it is.
        auto again = f.vfs->ReadIfReady(ino, off, len);
        REQUIRE(again);
        REQUIRE(again->ok());
        CHECK(Bytes(**again) == Bytes(*read));
      }
    }
  }
  // A framed file with only its first frame cached is not ready past it.
  f.cache->Clear();
  const uint64_t framed = f.Ino("docs/framed.dat");
  REQUIRE(f.vfs->Read(framed, 0, 100).ok());
  CHECK(f.vfs->ReadIfReady(framed, 0, 512));
  CHECK_FALSE(f.vfs->ReadIfReady(framed, 0, 513));
  CHECK_FALSE(f.vfs->ReadIfReady(framed, 600, 10));
  // Errors and control files need no load: answered at once.
  auto dir = f.vfs->ReadIfReady(f.Ino("docs"), 0, 10);
  REQUIRE(dir);
  CHECK(dir->status().err() == EISDIR);
  auto gone = f.vfs->ReadIfReady(999999, 0, 10);
  REQUIRE(gone);
  CHECK(gone->status().err() == ENOENT);
}

TEST_CASE("open and read enforce the file type and read-only access", "[vfs]") {
  Fixture f;
  const uint64_t file = f.Ino("raw.bin");
  CHECK(f.vfs->Open(file, O_RDONLY).ok());
  CHECK(f.vfs->Open(file, O_WRONLY).status().err() == EROFS);
  CHECK(f.vfs->Open(file, O_RDWR).status().err() == EROFS);
  CHECK(f.vfs->Open(f.Ino("docs"), O_RDONLY).status().err() == EISDIR);
  CHECK(f.vfs->Read(f.Ino("docs"), 0, 10).status().err() == EISDIR);
  CHECK(f.vfs->OpenDir(file).status().err() == ENOTDIR);
  CHECK(f.vfs->OpenDir(f.Ino("docs")).ok());
}

TEST_CASE("a corrupt payload is EIO, never bytes, and other files still read", "[vfs]") {
  Fixture f;
  const auto& m = *f.manifest;
  for (const char* path : {"raw.bin", "docs/text file.txt", "docs/framed.dat"}) {
    auto node = m.Resolve(path);
    REQUIRE(node.ok());
    const format::NodeRecord& r = m.node(*node);
    // Flip a byte in the middle of the payload (for the framed file: past the table).
    f.store->mutable_pack(r.partition)[r.offset + r.stored_size - 5] ^= 0x5a;
    auto got = f.vfs->Read(uint64_t{*node} + 1, 0, r.size);
    INFO(path);
    REQUIRE_FALSE(got.ok());
    CHECK(got.status().err() == EIO);
    CHECK(got.status().message().find(path) != std::string::npos);
    CHECK(got.status().message().find("partition") != std::string::npos);
  }
  CHECK(f.stats.corruption_errors >= 3);
  auto ok = f.vfs->Read(f.Ino("p1/small"), 0, 1000);
  REQUIRE(ok.ok());
  CHECK(Bytes(*ok) == Str(f.dataset.contents["p1/small"]));
}

TEST_CASE("a small cache stays within budget while serving everything", "[vfs]") {
  Fixture f(/*cache_bytes=*/1200);
  for (int round = 0; round < 3; ++round) {
    for (const auto& [path, content] : f.dataset.contents) {
      auto got = f.vfs->Read(f.Ino(path), 0, content.size());
      REQUIRE(got.ok());
      CHECK(Bytes(*got) == Str(content));
      REQUIRE(f.cache->Snapshot().bytes <= 1200);
    }
  }
  CHECK(f.cache->Snapshot().evictions > 0);
}

TEST_CASE("control files are reachable by path and readable", "[vfs]") {
  Fixture f;
  auto dir = f.vfs->Lookup(1, ".clairfs");
  REQUIRE(dir.ok());
  CHECK(dir->ino > f.manifest->node_count());
  auto stats = f.vfs->Lookup(dir->ino, "stats.json");
  REQUIRE(stats.ok());
  CHECK_FALSE(stats->cacheable);
  auto content = f.vfs->Read(stats->ino, 0, 1 << 20);
  REQUIRE(content.ok());
  CHECK(content->total == stats->size);
  CHECK(Bytes(*content).find("\"ram_cache\"") != std::string::npos);
  auto again = f.vfs->Lookup(dir->ino, "stats.json");  // a new snapshot is newer
  REQUIRE(again.ok());
  CHECK(again->mtime_ns > stats->mtime_ns);
  auto config = f.vfs->Lookup(dir->ino, "config");
  REQUIRE(config.ok());
  CHECK(Bytes(*f.vfs->Read(config->ino, 0, 100)) == "ram_cache: 1\n");
  CHECK(f.vfs->Lookup(dir->ino, "nope").status().err() == ENOENT);
  CHECK(f.vfs->Open(stats->ino, O_RDONLY)->direct_io);
  // Hidden from the root listing.
  bool listed = false;
  REQUIRE(f.vfs
              ->ReadDir(1, 0,
                        [&](std::string_view n, const Attr&, uint64_t) {
                          listed = listed || n == ".clairfs";
                          return true;
                        })
              .ok());
  CHECK_FALSE(listed);
}

std::vector<std::string> ControlListing(Vfs& vfs, uint64_t dir) {
  std::vector<std::string> names;
  REQUIRE(vfs.ReadDir(dir, 0,
                      [&](std::string_view n, const Attr&, uint64_t) {
                        names.emplace_back(n);
                        return true;
                      })
              .ok());
  return names;
}

TEST_CASE("the report control file is there with its text, absent without", "[vfs]") {
  const std::string text = "clairfs-report 1\nsocket @clairfs-report.12.0123456789abcdef\n";
  Fixture f(1 << 20, TrickySpec(), text);
  auto dir = f.vfs->Lookup(1, ".clairfs");
  REQUIRE(dir.ok());
  auto report = f.vfs->Lookup(dir->ino, "report");
  REQUIRE(report.ok());
  CHECK(report->size == text.size());
  CHECK_FALSE(report->cacheable);
  CHECK(f.vfs->Open(report->ino, O_RDONLY).ok());
  CHECK(Bytes(*f.vfs->Read(report->ino, 0, 4096)) == text);
  CHECK(Bytes(*f.vfs->Read(report->ino, 17, 4096)) == text.substr(17));
  CHECK(f.vfs->GetAttr(report->ino)->size == text.size());
  CHECK(ControlListing(*f.vfs, dir->ino) ==
        std::vector<std::string>{".", "..", "config", "report", "stats.json"});
  // The other control files are unchanged by it.
  auto config = f.vfs->Lookup(dir->ino, "config");
  REQUIRE(config.ok());
  CHECK(Bytes(*f.vfs->Read(config->ino, 0, 100)) == "ram_cache: 1\n");

  Fixture none;  // no report text: no file
  auto dir2 = none.vfs->Lookup(1, ".clairfs");
  REQUIRE(dir2.ok());
  CHECK(none.vfs->Lookup(dir2->ino, "report").status().err() == ENOENT);
  CHECK(ControlListing(*none.vfs, dir2->ino) ==
        std::vector<std::string>{".", "..", "config", "stats.json"});
  // Its inode, guessed, is no file either.
  CHECK(none.vfs->GetAttr(report->ino).status().err() == ENOENT);
  CHECK(none.vfs->Read(report->ino, 0, 10).status().err() == ENOENT);
  CHECK(none.vfs->Open(report->ino, O_RDONLY).status().err() == ENOENT);
}

TEST_CASE("the posix pack store opens packs lazily and names a missing one", "[vfs]") {
  ft::TempDir dir;
  auto ds = ft::BuildDataset(TrickySpec());
  REQUIRE(ds.ok());
  ft::WriteDataset(*ds, dir.path());
  auto m = format::Manifest::Load(dir.path());
  REQUIRE(m.ok());
  const uint64_t p0 = (*m)->partition(0).pack_bytes, p1 = (*m)->partition(1).pack_bytes;
  PackReadahead readahead(p0 + p1);  // room for partitions 0 and 1, not the broadcast pack
  PosixPackStore store(dir.path(), *m, &readahead);
  PackPayloadSource source(*m, &store);
  auto node = (*m)->Resolve("docs/framed.dat");
  REQUIRE(node.ok());
  std::vector<char> buf(3000);
  auto n = source.Read(*node, 100, 2000, buf.data());
  REQUIRE(n.ok());
  CHECK(*n == 2000);
  CHECK(std::string(buf.data(), 2000) == Str(ds->contents["docs/framed.dat"]).substr(100, 2000));
  REQUIRE(source.Read(*node, 0, 10, buf.data()).ok());  // a second use queues nothing more
  CHECK(readahead.requested_bytes() == p0);
  REQUIRE(std::remove((dir.path() + "/part-00001").c_str()) == 0);
  auto small = (*m)->Resolve("p1/small");
  REQUIRE(small.ok());
  auto missing = source.Read(*small, 0, 10, buf.data());
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().message().find("part-00001") != std::string::npos);
  CHECK(missing.status().message().find("p1/small") != std::string::npos);
  CHECK(readahead.requested_bytes() == p0);  // a failed open is not read ahead
}

TEST_CASE("pack read-ahead stays within its byte budget", "[vfs]") {
  ft::TempDir dir;
  const std::string path = dir.path() + "/pack";
  std::FILE* f = std::fopen(path.c_str(), "w");
  REQUIRE(f != nullptr);
  std::fputs("some pack bytes", f);
  std::fclose(f);
  PackReadahead off(0);
  off.Request(path, 15);
  CHECK(off.requested_bytes() == 0);
  PackReadahead readahead(40);
  readahead.Request(path, 15);
  readahead.Request(path, 15);
  readahead.Request(path, 15);  // would exceed 40
  CHECK(readahead.requested_bytes() == 30);
  readahead.Request(dir.path() + "/missing", 5);  // logged by the worker, not fatal
  CHECK(readahead.requested_bytes() == 35);
}  // the destructor stops and joins the worker

}  // namespace
}  // namespace clairfs::fs
