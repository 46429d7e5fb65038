// DispatchRead without FUSE: the thread that read a request answers it at once
// when the bytes need no wait, READs that wait go to the pool, and every READ
// gets exactly one reply - also when its load fails, times out, is shared
// with another READ, or the pool's queue is full (fs/vfs/read_dispatch.hpp).
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "fs/cache/cache_policy.hpp"
#include "fs/vfs/read_dispatch.hpp"
#include "tests/support/memory_dataset.hpp"

namespace clairfs::fs {
namespace {

namespace ft = format::testing;
using namespace std::chrono_literals;

// What a held load ends with once released.
enum class End { kBytes, kFail, kTimeout };

// A PayloadSource whose reads of held files wait until released, then return
// the bytes, an I/O error or a timeout (ETIMEDOUT, as a peer that did not
// answer within peer_timeout_ms). Other files, and delayed ones, read through.
class GatedSource final : public PayloadSource {
 public:
  explicit GatedSource(PayloadSource* inner) : inner_(inner) {}

  void Hold(uint32_t node) {
    std::lock_guard<std::mutex> lock(mu_);
    held_.insert(node);
  }
  void Release(uint32_t node, End end) {
    std::lock_guard<std::mutex> lock(mu_);
    held_.erase(node);
    ends_[node] = end;
    changed_.notify_all();
  }
  // Waits until `n` reads are waiting on held files.
  bool WaitForWaiting(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    return changed_.wait_for(lock, 10s, [&] { return waiting_ >= n; });
  }

  Result<size_t> Read(uint32_t node, uint64_t offset, size_t length, char* dst) override {
    End end = End::kBytes;
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (held_.count(node) != 0) {
        ++waiting_;
        changed_.notify_all();
        changed_.wait(lock, [&] { return held_.count(node) == 0; });
        --waiting_;
      }
      if (auto e = ends_.find(node); e != ends_.end()) end = e->second;
    }
    if (end == End::kFail) return Status::IOError("partition read failed (test)");
    if (end == End::kTimeout)
      return Status::IOError("peer did not answer in time (test)", ETIMEDOUT);
    return inner_->Read(node, offset, length, dst);
  }

 private:
  PayloadSource* const inner_;
  std::mutex mu_;
  std::condition_variable changed_;
  std::set<uint32_t> held_;
  std::map<uint32_t, End> ends_;
  int waiting_ = 0;
};

// Every reply a test's READs got, by request id.
struct Replies {
  struct Got {
    int calls = 0;
    int err = 0;
    std::string bytes;
    std::thread::id thread;
  };
  std::mutex mu;
  std::condition_variable changed;
  std::map<int, Got> got;
  int total = 0;

  auto For(int id) {
    return [this, id](const Result<ReadData>& r) {
      std::lock_guard<std::mutex> lock(mu);
      Got& g = got[id];
      ++g.calls;
      g.thread = std::this_thread::get_id();
      if (r.ok()) {
        for (const ReadSlice& s : r->slices) g.bytes.append(s.data, s.size);
      } else {
        g.err = r.status().err();
      }
      ++total;
      changed.notify_all();
    };
  }
  bool WaitFor(int n) {
    std::unique_lock<std::mutex> lock(mu);
    return changed.wait_for(lock, 10s, [&] { return total >= n; });
  }
  Got Get(int id) {
    std::lock_guard<std::mutex> lock(mu);
    return got.count(id) ? got[id] : Got{};
  }
};

constexpr int kFiles = 12;
constexpr size_t kFileSize = 3000;

// Even files one raw block, odd ones framed (several blocks each), on two partitions.
ft::DatasetSpec DispatchSpec() {
  ft::DatasetSpec spec;
  spec.partition_count = 2;
  spec.encode.frame_size = 1024;
  for (int i = 0; i < kFiles; ++i) {
    spec.files.push_back({"f" + std::to_string(i),
                          i % 2 == 0 ? ft::RandomBytes(kFileSize, 100 + i)
                                     : ft::MixedFrames(kFileSize, 1024, 100 + i),
                          static_cast<uint32_t>(i % 2)});
  }
  return spec;
}

struct Fixture : MemoryDataset {
  Fixture() : MemoryDataset(DispatchSpec()) {
    for (const auto& file : DispatchSpec().files) {
      contents.emplace_back(file.data.begin(), file.data.end());
    }
    for (int i = 0; i < kFiles; ++i) {
      auto n = manifest->Resolve("f" + std::to_string(i));
      REQUIRE(n.ok());
      nodes.push_back(*n);
    }
    gated = std::make_unique<GatedSource>(source.get());
    cache = std::make_unique<RamCache>(1 << 20, std::make_unique<LruPolicy>());
    VfsOptions o;
    o.decline_open = false;
    o.config_text = "ram_cache: 1M\n";
    vfs = std::make_unique<Vfs>(manifest, gated.get(), cache.get(), &stats, o);
  }
  // Safe from any thread: no assertion (Catch2's are for the main thread only).
  uint32_t Node(int i) const { return nodes.at(i); }
  uint64_t Ino(int i) const { return uint64_t{Node(i)} + 1; }

  std::vector<std::string> contents;
  std::vector<uint32_t> nodes;  // of f0, f1, ...
  std::unique_ptr<GatedSource> gated;
  std::unique_ptr<RamCache> cache;
  Stats stats;
  std::unique_ptr<Vfs> vfs;
};

TEST_CASE("a READ from RAM is answered at once while READs waiting on loads are held",
          "[dispatch]") {
  Fixture f;
  WorkPool pool("test-read", 2, 256);
  Replies replies;
  REQUIRE(f.vfs->Read(f.Ino(0), 0, kFileSize).ok());  // f0 now in RAM
  for (int i = 1; i <= 6; ++i) f.gated->Hold(f.Node(i));
  for (int i = 1; i <= 6; ++i)
    DispatchRead(f.vfs.get(), &pool, f.Ino(i), 0, kFileSize, replies.For(i));
  REQUIRE(f.gated->WaitForWaiting(2));  // both pool threads stuck on loads, four READs queued

  DispatchRead(f.vfs.get(), &pool, f.Ino(0), 100, 1000, replies.For(0));
  // Answered before DispatchRead returned, by this thread, with the right bytes.
  const Replies::Got fast = replies.Get(0);
  CHECK(fast.calls == 1);
  CHECK(fast.thread == std::this_thread::get_id());
  CHECK(fast.bytes == f.contents[0].substr(100, 1000));
  CHECK(replies.Get(1).calls + replies.Get(2).calls == 0);

  f.gated->Release(f.Node(1), End::kBytes);
  f.gated->Release(f.Node(2), End::kFail);
  f.gated->Release(f.Node(3), End::kTimeout);
  for (int i = 4; i <= 6; ++i) f.gated->Release(f.Node(i), End::kBytes);
  REQUIRE(replies.WaitFor(7));
  pool.Stop(true);
  for (int i : {1, 4, 5, 6}) {
    const Replies::Got g = replies.Get(i);
    CHECK(g.calls == 1);
    CHECK(g.err == 0);
    CHECK(g.bytes == f.contents[i]);
    CHECK(g.thread != std::this_thread::get_id());
  }
  CHECK(replies.Get(2).calls == 1);
  CHECK(replies.Get(2).err == EIO);
  CHECK(replies.Get(3).calls == 1);
  CHECK(replies.Get(3).err == ETIMEDOUT);
  CHECK(replies.total == 7);
}

TEST_CASE("past the queue bound the reading thread answers the READ itself", "[dispatch]") {
  Fixture f;
  WorkPool pool("test-read", 1, 1);
  Replies replies;
  for (int i = 1; i <= 3; ++i) f.gated->Hold(f.Node(i));
  DispatchRead(f.vfs.get(), &pool, f.Ino(1), 0, kFileSize, replies.For(1));  // the worker
  REQUIRE(f.gated->WaitForWaiting(1));
  DispatchRead(f.vfs.get(), &pool, f.Ino(2), 0, kFileSize, replies.For(2));  // queued
  CHECK(pool.queued() == 1);
  std::thread::id reader;
  std::thread reading([&] {  // the queue is full: this one blocks its own thread
    reader = std::this_thread::get_id();
    DispatchRead(f.vfs.get(), &pool, f.Ino(3), 0, kFileSize, replies.For(3));
  });
  REQUIRE(f.gated->WaitForWaiting(2));
  CHECK(replies.total == 0);
  f.gated->Release(f.Node(3), End::kBytes);
  reading.join();
  CHECK(replies.Get(3).calls == 1);
  CHECK(replies.Get(3).thread == reader);
  CHECK(replies.Get(3).bytes == f.contents[3]);
  f.gated->Release(f.Node(1), End::kFail);
  f.gated->Release(f.Node(2), End::kBytes);
  REQUIRE(replies.WaitFor(3));
  pool.Stop(true);
  CHECK(replies.Get(1).calls == 1);
  CHECK(replies.Get(1).err == EIO);
  CHECK(replies.Get(2).calls == 1);
  CHECK(replies.Get(2).bytes == f.contents[2]);
  CHECK(replies.total == 3);
}

TEST_CASE("READs sharing a load that fails each get the error once; the failure is not kept",
          "[dispatch]") {
  Fixture f;
  WorkPool pool("test-read", 3, 256);
  Replies replies;
  f.gated->Hold(f.Node(4));
  for (int id = 0; id < 3; ++id) {
    DispatchRead(f.vfs.get(), &pool, f.Ino(4), 500 * id, 700, replies.For(id));
  }
  REQUIRE(f.gated->WaitForWaiting(1));  // one loads, the others wait for its block
  std::this_thread::sleep_for(50ms);
  CHECK(replies.total == 0);
  f.gated->Release(f.Node(4), End::kFail);
  REQUIRE(replies.WaitFor(3));
  for (int id = 0; id < 3; ++id) {
    CHECK(replies.Get(id).calls == 1);
    CHECK(replies.Get(id).err == EIO);
  }
  f.gated->Release(f.Node(4), End::kBytes);  // the source is well again
  DispatchRead(f.vfs.get(), &pool, f.Ino(4), 0, kFileSize, replies.For(3));
  REQUIRE(replies.WaitFor(4));
  pool.Stop(true);
  CHECK(replies.Get(3).bytes == f.contents[4]);
  CHECK(replies.total == 4);
}

TEST_CASE("many readers, failing and slow loads, a small queue: one right reply per READ",
          "[dispatch]") {
  Fixture f;
  WorkPool pool("test-read", 3, 4);
  Replies replies;
  constexpr int kThreads = 4, kPerThread = 400;
  // Files 8-11 fail now and then: a releaser thread flips them between held,
  // failing and well while the readers run.
  std::atomic<bool> done{false};
  std::thread flipper([&] {
    std::mt19937 rng(7);
    while (!done.load()) {
      const int i = 8 + static_cast<int>(rng() % 4);
      f.gated->Hold(f.Node(i));
      std::this_thread::sleep_for(std::chrono::microseconds(rng() % 300));
      f.gated->Release(f.Node(i), rng() % 3 == 0 ? End::kFail : End::kBytes);
      if (rng() % 8 == 0) f.cache->Clear();  // RAM hits turn back into loads
    }
  });
  struct Asked {
    int file;
    uint64_t off;
    size_t len;
  };
  std::vector<Asked> asked(kThreads * kPerThread);  // each slot written by one reader
  std::vector<std::thread> readers;
  for (int t = 0; t < kThreads; ++t) {
    readers.emplace_back([&, t] {
      std::mt19937 rng(t);
      for (int k = 0; k < kPerThread; ++k) {
        const int id = t * kPerThread + k;
        Asked& a = asked[id];
        a = {static_cast<int>(rng() % kFiles), rng() % (kFileSize + 100), 1 + rng() % 2000};
        DispatchRead(f.vfs.get(), &pool, f.Ino(a.file), a.off, a.len, replies.For(id));
      }
    });
  }
  for (auto& r : readers) r.join();
  done = true;
  flipper.join();
  for (int i = 8; i < kFiles; ++i) f.gated->Release(f.Node(i), End::kBytes);
  REQUIRE(replies.WaitFor(kThreads * kPerThread));
  pool.Stop(true);
  int ok = 0, failed = 0;
  for (int id = 0; id < kThreads * kPerThread; ++id) {
    const Replies::Got g = replies.Get(id);
    REQUIRE(g.calls == 1);
    const auto [file, off, len] = asked[id];  // read after the readers joined
    if (g.err != 0) {
      CHECK(g.err == EIO);
      CHECK(file >= 8);  // only the flipped files fail
      ++failed;
      continue;
    }
    const std::string& want = f.contents[file];
    CHECK(g.bytes == (off < want.size() ? want.substr(off, len) : std::string()));
    ++ok;
  }
  CHECK(replies.total == kThreads * kPerThread);
  CHECK(ok > 0);
  INFO("failed " << failed);
}

}  // namespace
}  // namespace clairfs::fs
