// The writable area across nodes, without MPI: areas wired as the nodes of
// one job by an in-process network whose notices wait in each node's inbox
// until Pump() delivers them (as the transport's thread would, never under
// the sender's lock), and whose nodes can be made unreachable.
#include <sys/stat.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "base/mutex.hpp"
#include "fs/vfs/write_area.hpp"
#include "tests/fs/write_area_support.hpp"
#include "tests/support/temp_dir.hpp"

namespace clairfs::fs {
namespace {

using prefetch::testing::TempDir;

class Net;

class Port : public WriteAreaPeers {
 public:
  Port(Net* net, int rank) : net_(net), rank_(rank) {}
  void Publish(std::string notice) override;
  Result<std::string> Read(int home, uint64_t ino, uint64_t offset, size_t size) override;

 private:
  Net* net_;
  int rank_;
};

// `n` nodes, each an area with its own `local`, over one shared `persist`
// or (to see what travels between nodes alone) one `persist` each.
class Net {
 public:
  Net(const std::string& base, int n, bool shared_persist) {
    for (int r = 0; r < n; ++r) {
      WriteAreaOptions o = Options(base, std::chrono::milliseconds(0));
      o.local = base + "/local" + std::to_string(r);
      if (!shared_persist) o.persist = base + "/persist" + std::to_string(r);
      auto area = WriteArea::Open(o, kFirstIno);
      REQUIRE(area.ok());
      areas.push_back(std::move(area).value());
      ports_.push_back(std::make_unique<Port>(this, r));
      areas.back()->Connect(ports_.back().get(), r);
      areas.back()->Start();
      inbox_.emplace_back();
      down.push_back(false);
    }
  }
  // Delivers every queued notice (to `only`'s inbox alone if given), in order per sender.
  void Pump(int only = -1) {
    for (int r = 0; r < static_cast<int>(areas.size()); ++r) {
      if (only >= 0 && r != only) continue;
      for (;;) {
        std::pair<int, std::string> m;
        {
          MutexLock lock(&mu_);
          if (inbox_[r].empty()) break;
          m = std::move(inbox_[r].front());
          inbox_[r].pop_front();
        }
        if (!down[r]) areas[r]->ApplyNotice(m.first, m.second);
      }
    }
  }
  // Node `r` hears the higher ranks' notices first (each sender's in order).
  void HigherRanksFirst(int r) {
    MutexLock lock(&mu_);
    std::stable_sort(inbox_[r].begin(), inbox_[r].end(),
                     [](const auto& x, const auto& y) { return x.first > y.first; });
  }
  void Send(int from, std::string notice) {
    MutexLock lock(&mu_);
    for (int r = 0; r < static_cast<int>(areas.size()); ++r) {
      if (r != from && !down[from]) inbox_[r].emplace_back(from, notice);
    }
  }

  std::vector<std::unique_ptr<WriteArea>> areas;
  std::vector<bool> down;  // unreachable: sends nothing, answers no read

 private:
  Mutex mu_;
  std::vector<std::unique_ptr<Port>> ports_;
  std::vector<std::deque<std::pair<int, std::string>>> inbox_;
};

void Port::Publish(std::string notice) { net_->Send(rank_, std::move(notice)); }

Result<std::string> Port::Read(int home, uint64_t ino, uint64_t offset, size_t size) {
  if (net_->down[home] || home == rank_) return Status::IOError("unreachable", EHOSTDOWN);
  return net_->areas[home]->ServePeer(ino, offset, size);
}

// Writes `bytes` as file `rel` (its directory must exist), fsynced.
uint64_t Put(WriteArea& a, const std::string& rel, const std::string& bytes) {
  auto [dir, leaf] = Split(rel);
  const uint64_t parent = Resolve(a, dir);
  REQUIRE(parent != 0);
  uint64_t ino = Resolve(a, rel);
  if (ino == 0) {
    auto made = a.Create(parent, leaf, 0644);
    REQUIRE(made.ok());
    ino = made->ino;
  } else {
    AttrChange trunc;
    trunc.size = true;
    trunc.new_size = 0;
    REQUIRE(a.SetAttr(ino, trunc).ok());
  }
  REQUIRE(a.Write(ino, 0, bytes.data(), bytes.size()).ok());
  REQUIRE(a.Fsync(ino).ok());
  return ino;
}

std::string ReadAll(WriteArea& a, const std::string& rel) {
  const uint64_t ino = Resolve(a, rel);
  if (ino == 0) return "<missing>";
  auto attr = a.GetAttr(ino);
  REQUIRE(attr.ok());
  auto bytes = a.Read(ino, 0, attr->size + 10);
  REQUIRE(bytes.ok());
  CHECK(bytes->size() == attr->size);
  return *bytes;
}

uint64_t Stat(WriteArea& a, const std::string& member) {
  JsonWriter w;
  w.BeginObject();
  a.WriteStats(w);
  w.EndObject();
  const std::string json = w.str();
  const size_t at = json.find("\"" + member + "\":");
  REQUIRE(at != std::string::npos);
  return std::stoull(json.substr(at + member.size() + 3));
}

TEST_CASE("A file written on one node is read on the others from its node", "[write_area][peers]") {
  TempDir tmp;
  Net net(tmp.path(), 3, /*shared_persist=*/false);
  WriteArea& a = *net.areas[0];
  WriteArea& b = *net.areas[1];
  REQUIRE(a.Mkdir(a.root_ino(), "ckpt", 0755).ok());
  Put(a, "ckpt/epoch1.pt", std::string(3 << 20, 'x') + "end");
  REQUIRE(ReadAll(b, "ckpt/epoch1.pt") == "<missing>");  // nothing delivered yet
  net.Pump();
  CHECK(ReadAll(b, "ckpt/epoch1.pt") == std::string(3 << 20, 'x') + "end");
  CHECK(ReadAll(*net.areas[2], "ckpt/epoch1.pt") == std::string(3 << 20, 'x') + "end");
  CHECK(Stat(b, "peer_reads") == 1);
  CHECK(Stat(b, "peer_fallbacks") == 0);
  CHECK(Stat(a, "served_reads") == 2);
  CHECK(Stat(a, "notices_sent") >= 2);  // the directory, the file

  SECTION("written again: the others read the new bytes") {
    Put(a, "ckpt/epoch1.pt", "short");
    net.Pump();
    CHECK(ReadAll(b, "ckpt/epoch1.pt") == "short");
  }
  SECTION("tempfile + rename over it, then unlink and rmdir") {
    Put(a, "ckpt/.tmp123", "new checkpoint");
    const uint64_t dir = Resolve(a, "ckpt");
    REQUIRE(a.Rename(dir, ".tmp123", dir, "epoch1.pt", 0).ok());
    net.Pump();
    CHECK(ReadAll(b, "ckpt/epoch1.pt") == "new checkpoint");
    CHECK(ReadAll(b, "ckpt/.tmp123") == "<missing>");
    REQUIRE(a.Unlink(dir, "epoch1.pt").ok());
    REQUIRE(a.Rmdir(a.root_ino(), "ckpt").ok());
    net.Pump();
    CHECK(ReadAll(b, "ckpt/epoch1.pt") == "<missing>");
    CHECK(Resolve(b, "ckpt") == 0);
  }
  SECTION("changed on another node: copied there first, that node's own from then on") {
    const uint64_t ino = Resolve(b, "ckpt/epoch1.pt");
    REQUIRE(b.Write(ino, 0, "Y", 1).ok());
    REQUIRE(b.Fsync(ino).ok());
    CHECK(ReadAll(b, "ckpt/epoch1.pt") == "Y" + std::string((3 << 20) - 1, 'x') + "end");
    CHECK(ReadAll(a, "ckpt/epoch1.pt") == std::string(3 << 20, 'x') + "end");  // its own copy
    net.Pump();
    CHECK(ReadAll(a, "ckpt/epoch1.pt") == std::string(3 << 20, 'x') + "end");
    CHECK(Stat(a, "peer_conflicts") >= 1);  // one per notice of it
    CHECK(DiskTree(tmp.path() + "/persist1")["ckpt/epoch1.pt"] ==
          "Y" + std::string((3 << 20) - 1, 'x') + "end");  // drained by b
  }
}

TEST_CASE("Two nodes writing one path: the same winner on every other node",
          "[write_area][peers]") {
  TempDir tmp;
  Net net(tmp.path(), 4, /*shared_persist=*/false);
  Put(*net.areas[0], "model.h5", "from rank 0");
  Put(*net.areas[1], "model.h5", "from rank 1, later");
  // Rank 2 hears rank 0 first, rank 3 hears rank 1 first.
  net.HigherRanksFirst(3);
  net.Pump();
  CHECK(ReadAll(*net.areas[2], "model.h5") == "from rank 1, later");
  CHECK(ReadAll(*net.areas[3], "model.h5") == "from rank 1, later");
  // The writers keep their own copies, and count the other's as a conflict.
  CHECK(ReadAll(*net.areas[0], "model.h5") == "from rank 0");
  CHECK(ReadAll(*net.areas[1], "model.h5") == "from rank 1, later");
  CHECK(Stat(*net.areas[0], "peer_conflicts") >= 1);
  CHECK(Stat(*net.areas[1], "peer_conflicts") >= 1);
}

TEST_CASE("A peer's file whose node cannot answer is read from persist", "[write_area][peers]") {
  TempDir tmp;
  Net net(tmp.path(), 2, /*shared_persist=*/true);
  WriteArea& b = *net.areas[1];
  Put(*net.areas[0], "log.txt", "fsynced, so in persist");
  net.Pump();
  CHECK(ReadAll(b, "log.txt") == "fsynced, so in persist");
  CHECK(Stat(b, "peer_reads") == 1);
  net.down[0] = true;
  CHECK(ReadAll(b, "log.txt") == "fsynced, so in persist");
  CHECK(Stat(b, "peer_fallbacks") == 1);
  // Changed on b meanwhile: copied from persist instead.
  const uint64_t ino = Resolve(b, "log.txt");
  REQUIRE(b.Write(ino, 22, "; appended on b", 15).ok());
  REQUIRE(b.Fsync(ino).ok());
  CHECK(ReadAll(b, "log.txt") == "fsynced, so in persist; appended on b");
  CHECK(DiskTree(tmp.path() + "/persist")["log.txt"] == "fsynced, so in persist; appended on b");
}

TEST_CASE("Notices that do not parse or lead outside the area change nothing",
          "[write_area][peers]") {
  TempDir tmp;
  Net net(tmp.path(), 2, /*shared_persist=*/false);
  WriteArea& b = *net.areas[1];
  const std::string file_head("\x01", 1);
  for (const std::string& bad :
       {std::string(), std::string("\x09", 1), file_head, file_head + std::string(40, '\0'),
        std::string("\x03\x02\0\0\0..", 7), std::string("\x03\x04\0\0\0a//b", 9),
        std::string("\x03\x01\0\0\0a", 6) + "trailing"}) {
    b.ApplyNotice(0, bad);
  }
  CHECK(Stat(b, "notices_rejected") == 7);
  CHECK(Stat(b, "notices_applied") == 0);
  CHECK(AreaTree(b).empty());
  CHECK(b.ServePeer(12345, 0, 10).status().err() == ESTALE);
}

}  // namespace
}  // namespace clairfs::fs
