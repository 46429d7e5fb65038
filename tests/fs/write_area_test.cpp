// The writable area without FUSE: random sequences of changes applied to the
// area and to a plain directory (the model), compared after every step, then
// the drained `persist` and a restarted area compared with the model; a run
// killed before its drain; confinement.
#include "fs/vfs/write_area.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>

#include "tests/fs/write_area_support.hpp"
#include "tests/support/temp_dir.hpp"

namespace clairfs::fs {
namespace {

namespace stdfs = std::filesystem;
using prefetch::testing::TempDir;

int Errno(const Status& st) { return st.ok() ? 0 : st.err(); }
int Posix(int rc) { return rc == 0 ? 0 : errno; }

// One random change, applied to both; the errnos must agree.
struct Runner {
  WriteArea& area;
  std::string model;
  std::mt19937_64 rng;
  std::vector<std::string> names{"a", "b", "c", "d"};

  std::string RandomPath() {
    std::string p = names[rng() % names.size()];
    if (rng() % 2) p += "/" + names[rng() % names.size()];
    if (rng() % 4 == 0) p += "/" + names[rng() % names.size()];
    return p;
  }
  std::string M(const std::string& rel) const { return model + "/" + rel; }

  void Step() {
    const std::string p = RandomPath();
    const auto [dir, leaf] = Split(p);
    const uint64_t parent = Resolve(area, dir);
    const bool parent_ok = parent != 0 && stdfs::is_directory(M(dir));
    if (!parent_ok) return;  // both agree the parent is missing; nothing to do
    const int op = static_cast<int>(rng() % 9);
    INFO("op " << op << " on " << p);
    switch (op) {
      case 0: {  // mkdir
        const int want = Posix(::mkdir(M(p).c_str(), 0755));
        CHECK(Errno(area.Mkdir(parent, leaf, 0755).status()) == want);
        break;
      }
      case 1:
      case 2: {  // write at an offset (creating the file when missing)
        const uint64_t off = rng() % 5000;
        std::string data(1 + rng() % 3000, static_cast<char>('a' + rng() % 26));
        uint64_t ino = Resolve(area, p);
        if (ino == 0) {
          const int fd = ::open(M(p).c_str(), O_CREAT | O_EXCL | O_WRONLY, 0644);
          auto made = area.Create(parent, leaf, 0644);
          CHECK((fd >= 0) == made.ok());
          if (fd < 0) return;
          ::close(fd);
          ino = made->ino;
        }
        const int fd = ::open(M(p).c_str(), O_WRONLY);
        if (fd < 0) {  // a directory
          CHECK(Errno(area.Write(ino, off, data.data(), data.size()).status()) == EISDIR);
          return;
        }
        REQUIRE(::pwrite(fd, data.data(), data.size(), static_cast<off_t>(off)) ==
                static_cast<ssize_t>(data.size()));
        ::close(fd);
        auto wrote = area.Write(ino, off, data.data(), data.size());
        REQUIRE(wrote.ok());
        CHECK(*wrote == data.size());
        break;
      }
      case 3: {  // truncate
        const uint64_t ino = Resolve(area, p);
        if (ino == 0 || stdfs::is_directory(M(p))) return;
        const uint64_t size = rng() % 6000;
        REQUIRE(::truncate(M(p).c_str(), static_cast<off_t>(size)) == 0);
        AttrChange c;
        c.size = true;
        c.new_size = size;
        CHECK(area.SetAttr(ino, c).ok());
        break;
      }
      case 4: {  // unlink
        const int want = Posix(::unlink(M(p).c_str()));
        CHECK(Errno(area.Unlink(parent, leaf)) == want);
        break;
      }
      case 5: {  // rmdir
        const int want = Posix(::rmdir(M(p).c_str()));
        CHECK(Errno(area.Rmdir(parent, leaf)) == want);
        break;
      }
      case 6:
      case 7: {  // rename, replacing or not
        const std::string q = RandomPath();
        const auto [qdir, qleaf] = Split(q);
        const uint64_t qparent = Resolve(area, qdir);
        if (qparent == 0 || !stdfs::is_directory(M(qdir))) return;
        const bool noreplace = rng() % 4 == 0;
        const int want =
            Posix(::renameat2(AT_FDCWD, M(p).c_str(), AT_FDCWD, M(q).c_str(), noreplace ? 1 : 0));
        INFO("rename to " << q);
        CHECK(Errno(area.Rename(parent, leaf, qparent, qleaf, noreplace ? 1 : 0)) == want);
        break;
      }
      case 8: {  // fsync
        const uint64_t ino = Resolve(area, p);
        if (ino != 0) CHECK(area.Fsync(ino).ok());
        break;
      }
    }
  }
};

TEST_CASE(
    "Random changes: the area equals a plain directory after every step, and "
    "persist equals it once drained",
    "[write_area]") {
  const uint64_t seed = GENERATE(1, 2, 3, 4, 5, 6);
  TempDir tmp;
  stdfs::create_directories(tmp.path() + "/model");
  // settle 0: files are drained while the changes go on, not only at the end.
  auto area =
      WriteArea::Open(Options(tmp.path(), std::chrono::milliseconds(seed % 2 ? 0 : 50)), kFirstIno);
  REQUIRE(area.ok());
  (*area)->Start();
  Runner run{**area, tmp.path() + "/model", std::mt19937_64(seed)};
  for (int i = 0; i < 300; ++i) {
    run.Step();
    INFO("step " << i << " seed " << seed);
    REQUIRE(AreaTree(**area) == DiskTree(run.model));
  }
  REQUIRE((*area)->Finish(std::chrono::seconds(10)).ok());
  CHECK(DiskTree(tmp.path() + "/persist") == DiskTree(run.model));
  area->reset();

  // The next run on this node sees the same, and has nothing to drain.
  auto again = WriteArea::Open(Options(tmp.path(), std::chrono::milliseconds(0)), kFirstIno);
  REQUIRE(again.ok());
  CHECK((*again)->pending() == 0);
  CHECK(AreaTree(**again) == DiskTree(run.model));
  again->reset();

  // A run on another node (an empty local dir) reads it all from persist.
  auto elsewhere = Options(tmp.path(), std::chrono::milliseconds(0));
  elsewhere.local = tmp.path() + "/other-local";
  auto other = WriteArea::Open(elsewhere, kFirstIno);
  REQUIRE(other.ok());
  CHECK(AreaTree(**other) == DiskTree(run.model));
}

TEST_CASE(
    "fsync returns once the file is in persist; what a killed run left in local is "
    "drained at the next start",
    "[write_area]") {
  TempDir tmp;
  const std::string persist = tmp.path() + "/persist";
  {
    // A settle no test outlasts: only fsync drains.
    auto area = WriteArea::Open(Options(tmp.path(), std::chrono::hours(1)), kFirstIno);
    REQUIRE(area.ok());
    WriteArea& a = **area;
    a.Start();
    auto f = a.Create(a.root_ino(), "ckpt.pt", 0640);
    REQUIRE(f.ok());
    REQUIRE(a.Write(f->ino, 0, "weights", 7).ok());
    CHECK_FALSE(stdfs::exists(persist + "/ckpt.pt"));
    REQUIRE(a.Fsync(f->ino).ok());
    CHECK(DiskTree(persist)["ckpt.pt"] == "weights");
    CHECK((stdfs::status(persist + "/ckpt.pt").permissions() & stdfs::perms::all) ==
          (stdfs::perms::owner_read | stdfs::perms::owner_write | stdfs::perms::group_read));
    auto g = a.Create(a.root_ino(), "late.log", 0644);
    REQUIRE(g.ok());
    REQUIRE(a.Write(g->ino, 0, "not drained", 11).ok());
    // No Finish: the daemon is killed with late.log only in local.
  }
  CHECK_FALSE(stdfs::exists(persist + "/late.log"));
  auto area = WriteArea::Open(Options(tmp.path(), std::chrono::milliseconds(0)), kFirstIno);
  REQUIRE(area.ok());
  CHECK((*area)->pending() == 1);
  (*area)->Start();
  REQUIRE((*area)->Finish(std::chrono::seconds(10)).ok());
  CHECK(DiskTree(persist) == Tree{{"ckpt.pt", "weights"}, {"late.log", "not drained"}});
}

TEST_CASE(
    "A file replaced by rename is replaced in persist in one step, and an open "
    "unlinked file keeps its bytes until forgotten",
    "[write_area]") {
  TempDir tmp;
  auto area = WriteArea::Open(Options(tmp.path(), std::chrono::milliseconds(0)), kFirstIno);
  REQUIRE(area.ok());
  WriteArea& a = **area;
  a.Start();
  auto old = a.Create(a.root_ino(), "model.pt", 0644);
  REQUIRE(a.Write(old->ino, 0, "old", 3).ok());
  REQUIRE(a.Fsync(old->ino).ok());
  auto tmpfile = a.Create(a.root_ino(), "tmpXYZ", 0600);
  REQUIRE(a.Write(tmpfile->ino, 0, "new!", 4).ok());
  REQUIRE(a.Rename(a.root_ino(), "tmpXYZ", a.root_ino(), "model.pt", 0).ok());
  // The replaced file is still known to the kernel (one lookup): readable.
  auto kept = a.Read(old->ino, 0, 10);
  REQUIRE(kept.ok());
  CHECK(*kept == "old");
  CHECK(a.GetAttr(old->ino)->nlink == 0);
  a.Forget(old->ino, 1);
  CHECK(a.GetAttr(old->ino).status().IsNotFound());
  CHECK(stdfs::is_empty(tmp.path() + "/local/trash"));
  REQUIRE(a.Fsync(a.root_ino()).ok());
  CHECK(DiskTree(tmp.path() + "/persist") == Tree{{"model.pt", "new!"}});
  CHECK(Errno(a.Rename(a.root_ino(), "model.pt", a.root_ino(), "model.pt", 2)) == EINVAL);
}

TEST_CASE("Names and symlinks never lead outside local or persist", "[write_area]") {
  TempDir tmp;
  stdfs::create_directories(tmp.path() + "/persist/ok");
  stdfs::create_directories(tmp.path() + "/elsewhere");
  stdfs::create_directory_symlink(tmp.path() + "/elsewhere", tmp.path() + "/persist/link");
  auto area = WriteArea::Open(Options(tmp.path(), std::chrono::milliseconds(0)), kFirstIno);
  REQUIRE(area.ok());
  WriteArea& a = **area;
  a.Start();
  // The symlink someone put into persist is not shown, and not followed.
  CHECK(a.Lookup(a.root_ino(), "link").status().IsNotFound());
  for (const char* bad : {"..", ".", "a/b", ".clairfs-drain.1.2"}) {
    INFO(bad);
    CHECK_FALSE(a.Create(a.root_ino(), bad, 0644).ok());
    CHECK_FALSE(a.Mkdir(a.root_ino(), bad, 0755).ok());
  }
  // A directory named like the symlink: the drain replaces the link, never
  // writes through it.
  auto d = a.Mkdir(a.root_ino(), "link", 0755);
  REQUIRE(d.ok());
  auto f = a.Create(d->ino, "x", 0644);
  REQUIRE(a.Write(f->ino, 0, "data", 4).ok());
  REQUIRE(a.Fsync(f->ino).ok());
  CHECK(stdfs::is_empty(tmp.path() + "/elsewhere"));
  CHECK(DiskTree(tmp.path() + "/persist")["link/x"] == "data");
  // Another daemon may not share this local dir.
  auto second = WriteArea::Open(Options(tmp.path(), std::chrono::milliseconds(0)), kFirstIno);
  CHECK(second.status().err() == EBUSY);
}

TEST_CASE(
    "A persist that fails makes fsync fail with its errno; the drain goes on once it "
    "is back",
    "[write_area]") {
  TempDir tmp;
  auto area = WriteArea::Open(Options(tmp.path(), std::chrono::hours(1)), kFirstIno);
  REQUIRE(area.ok());
  WriteArea& a = **area;
  a.Start();
  auto d = a.Mkdir(a.root_ino(), "ck", 0755);
  REQUIRE(a.Fsync(a.root_ino()).ok());
  // persist/ck made unwritable (root ignores modes: a file in the way instead).
  stdfs::remove(tmp.path() + "/persist/ck");
  std::ofstream(tmp.path() + "/persist/ck") << "in the way";
  auto f = a.Create(d->ino, "w.bin", 0644);
  REQUIRE(a.Write(f->ino, 0, "abc", 3).ok());
  Status st = a.Fsync(f->ino);
  CHECK_FALSE(st.ok());
  CHECK(st.err() == ENOTDIR);
  stdfs::remove(tmp.path() + "/persist/ck");
  stdfs::create_directory(tmp.path() + "/persist/ck");
  REQUIRE(a.Finish(std::chrono::seconds(10)).ok());
  CHECK(DiskTree(tmp.path() + "/persist") == Tree{{"ck", "<dir>"}, {"ck/w.bin", "abc"}});
}

TEST_CASE(
    "An earlier run's file renamed before the drain renames it is read from where its "
    "bytes are",
    "[write_area]") {
  TempDir tmp;
  stdfs::create_directories(tmp.path() + "/persist/run1");
  std::ofstream(tmp.path() + "/persist/run1/best.pt") << "weights";
  auto area = WriteArea::Open(Options(tmp.path(), std::chrono::milliseconds(0)), kFirstIno);
  REQUIRE(area.ok());
  WriteArea& a = **area;  // the drain not started: the rename stays queued
  const uint64_t dir = Resolve(a, "run1");
  const uint64_t f = Resolve(a, "run1/best.pt");
  REQUIRE(a.Rename(dir, "best.pt", a.root_ino(), "restored.pt", 0).ok());
  CHECK(*a.Read(f, 0, 100) == "weights");
  CHECK(a.Lookup(dir, "best.pt").status().IsNotFound());  // not found again in persist
  CHECK(a.GetAttr(f)->size == 7);
  a.Start();
  REQUIRE(a.Fsync(a.root_ino()).ok());
  CHECK(*a.Read(f, 0, 100) == "weights");
  CHECK(DiskTree(tmp.path() + "/persist") == Tree{{"run1", "<dir>"}, {"restored.pt", "weights"}});
  CHECK(stdfs::is_empty(tmp.path() + "/local/tree"));  // never copied
}

TEST_CASE(
    "Two nodes over one persist: what one drains the other finds, replaced and removed "
    "ones included; writing the same path twice is a counted conflict, never a mix",
    "[write_area]") {
  TempDir tmp;
  auto node_a = WriteArea::Open(Options(tmp.path(), std::chrono::hours(1)), kFirstIno);
  auto b_options = Options(tmp.path(), std::chrono::hours(1));
  b_options.local = tmp.path() + "/local-b";
  auto node_b = WriteArea::Open(b_options, kFirstIno);
  REQUIRE(node_a.ok());
  REQUIRE(node_b.ok());
  WriteArea& a = **node_a;
  WriteArea& b = **node_b;
  a.Start();
  b.Start();
  const auto put = [](WriteArea& area, uint64_t dir, const char* name, const std::string& bytes) {
    auto f = area.Create(dir, name, 0644);
    REQUIRE(f.ok());
    REQUIRE(area.Write(f->ino, 0, bytes.data(), bytes.size()).ok());
    REQUIRE(area.Fsync(f->ino).ok());
    return f->ino;
  };
  auto ck = a.Mkdir(a.root_ino(), "ckpt", 0755);
  REQUIRE(ck.ok());
  put(a, ck->ino, "model.pt", "epoch 1");
  CHECK(Resolve(b, "ckpt/model.pt") != 0);
  CHECK(AreaTree(b) == Tree{{"ckpt", "<dir>"}, {"ckpt/model.pt", "epoch 1"}});
  const uint64_t seen = Resolve(b, "ckpt/model.pt");

  // Replaced on A (a temporary renamed over it): B reads the new bytes.
  put(a, ck->ino, "tmp1", "epoch 2, longer");
  REQUIRE(a.Rename(ck->ino, "tmp1", ck->ino, "model.pt", 0).ok());
  REQUIRE(a.Fsync(a.root_ino()).ok());
  CHECK(b.GetAttr(seen)->size == 15);
  CHECK(*b.Read(seen, 0, 100) == "epoch 2, longer");
  CHECK(AreaTree(b) == AreaTree(a));

  // Removed on A: gone on B.
  REQUIRE(a.Unlink(ck->ino, "model.pt").ok());
  REQUIRE(a.Fsync(a.root_ino()).ok());
  CHECK(Resolve(b, "ckpt/model.pt") == 0);
  CHECK(AreaTree(b) == Tree{{"ckpt", "<dir>"}});

  // Both write one path: the copy drained last wins whole, and is counted.
  put(a, a.root_ino(), "same.txt", "from A");
  put(b, b.root_ino(), "same.txt", "from B, longer");
  CHECK(DiskTree(tmp.path() + "/persist")["same.txt"] == "from B, longer");
  JsonWriter w;
  w.BeginObject();
  b.WriteStats(w);
  w.EndObject();
  CHECK(w.str().find("\"conflicts\":1") != std::string::npos);
}

TEST_CASE(
    "A clean stop leaves nothing in local that a later run on the node could drain "
    "over what other nodes changed in persist since",
    "[write_area]") {
  TempDir tmp;
  auto b_options = Options(tmp.path(), std::chrono::milliseconds(0));
  b_options.local = tmp.path() + "/local-b";
  {  // job 1 on node A
    auto a = WriteArea::Open(Options(tmp.path(), std::chrono::milliseconds(0)), kFirstIno);
    REQUIRE(a.ok());
    (*a)->Start();
    for (const char* name : {"old.pt", "best.pt"}) {
      auto f = (*a)->Create((*a)->root_ino(), name, 0644);
      REQUIRE((*a)->Write(f->ino, 0, "job 1", 5).ok());
    }
    REQUIRE((*a)->Finish(std::chrono::seconds(10)).ok());
  }
  CHECK_FALSE(stdfs::exists(tmp.path() + "/local/tree"));  // emptied
  {  // job 2 on node B: removes one, replaces the other
    auto b = WriteArea::Open(b_options, kFirstIno);
    REQUIRE(b.ok());
    WriteArea& area = **b;
    area.Start();
    REQUIRE(area.Unlink(area.root_ino(), "old.pt").ok());
    auto f = area.Create(area.root_ino(), "tmp", 0644);
    REQUIRE(area.Write(f->ino, 0, "job 2, better", 13).ok());
    REQUIRE(area.Rename(area.root_ino(), "tmp", area.root_ino(), "best.pt", 0).ok());
    REQUIRE(area.Finish(std::chrono::seconds(10)).ok());
  }
  // job 3 on node A again: sees job 2's state, drains nothing.
  auto a = WriteArea::Open(Options(tmp.path(), std::chrono::milliseconds(0)), kFirstIno);
  REQUIRE(a.ok());
  CHECK((*a)->pending() == 0);
  CHECK(AreaTree(**a) == Tree{{"best.pt", "job 2, better"}});
}

}  // namespace
}  // namespace clairfs::fs
