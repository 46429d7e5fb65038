// The transport protocol on the in-process loopback fabric: round trips,
// batching, reordering, deadlines, dead peers and malformed messages.
#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "fs/net/loopback_transport.hpp"
#include "fs/net/protocol.hpp"
#include "tests/fs/net/expected_bytes.hpp"

using namespace clairfs;
using namespace clairfs::fs;
using namespace std::chrono_literals;

namespace {

struct Cluster {
  explicit Cluster(int n) : fabric(std::make_shared<LoopbackFabric>(n)) {
    for (int r = 0; r < n; ++r) {
      ranks.push_back(std::make_unique<LoopbackTransport>(fabric, r));
      REQUIRE(ranks.back()
                  ->Start(
                      [r](int, const PackRead& read) -> Result<std::vector<char>> {
                        if (read.partition == 999) return Status::NotFound("no such partition");
                        return testing::ExpectedBytes(r, read);
                      },
                      2)
                  .ok());
    }
  }
  ~Cluster() {
    for (auto& t : ranks) t->Stop();
  }
  std::shared_ptr<LoopbackFabric> fabric;
  std::vector<std::unique_ptr<LoopbackTransport>> ranks;
};

std::chrono::steady_clock::time_point In(std::chrono::milliseconds ms) {
  return std::chrono::steady_clock::now() + ms;
}

}  // namespace

TEST_CASE("protocol batches round trip and reject malformed bytes", "[net]") {
  std::vector<wire::Request> reqs{{1, {3, 4096, 100}}, {2, {0, 0, 0}}, {99, {7, 1ull << 40, 5}}};
  auto enc = wire::EncodeRequests(reqs);
  auto dec = wire::DecodeRequests(enc.data(), enc.size());
  REQUIRE(dec.ok());
  REQUIRE(dec->size() == 3);
  CHECK((*dec)[2].id == 99);
  CHECK((*dec)[2].read.offset == (1ull << 40));
  CHECK_FALSE(wire::DecodeRequests(enc.data(), enc.size() - 1).ok());  // truncated
  enc.push_back(0);
  CHECK_FALSE(wire::DecodeRequests(enc.data(), enc.size()).ok());  // trailing byte
  CHECK_FALSE(wire::DecodeRequests(enc.data(), 3).ok());           // shorter than a header

  std::vector<wire::Reply> reps{{1, 0, {'a', 'b'}}, {2, EIO, {}}, {3, 0, {'c'}}};
  auto renc = wire::EncodeReplies(reps);
  auto rdec = wire::DecodeReplies(renc.data(), renc.size());
  REQUIRE(rdec.ok());
  CHECK(std::ranges::equal((*rdec)[0].data, std::vector<char>{'a', 'b'}));
  CHECK((*rdec)[1].err == EIO);
  CHECK(std::ranges::equal((*rdec)[2].data, std::vector<char>{'c'}));
  // A reply whose length points past the end is rejected, not read.
  wire::ReplyEntry e;
  std::memcpy(&e, renc.data() + sizeof(wire::BatchHeader), sizeof e);
  e.length = 1000;
  std::memcpy(renc.data() + sizeof(wire::BatchHeader), &e, sizeof e);
  CHECK_FALSE(wire::DecodeReplies(renc.data(), renc.size()).ok());
  // A count that claims more entries than the bytes hold.
  wire::BatchHeader h{wire::kRequestMagic, 1000000};
  std::vector<char> bogus(sizeof h);
  std::memcpy(bogus.data(), &h, sizeof h);
  CHECK_FALSE(wire::DecodeRequests(bogus.data(), bogus.size()).ok());
}

TEST_CASE("frame reads round trip; one with a length is rejected", "[net]") {
  std::vector<wire::Request> reqs{{1, {3, 4096, 0, 5000}}, {2, {0, 32, 100}}};
  auto enc = wire::EncodeRequests(reqs);
  auto dec = wire::DecodeRequests(enc.data(), enc.size());
  REQUIRE(dec.ok());
  REQUIRE(dec->size() == 2);
  CHECK((*dec)[0].read.frame_at == 5000);
  CHECK((*dec)[0].read.offset == 4096);
  CHECK((*dec)[1].read.frame_at == kNoFrame);
  CHECK(wire::EncodeRequests(*dec) == enc);
  reqs[0].read.length = 10;  // a frame read names no length: the answer's size is the owner's
  enc = wire::EncodeRequests(reqs);
  CHECK_FALSE(wire::DecodeRequests(enc.data(), enc.size()).ok());
  // A read of a writable area's file names the file in frame_at, and a range.
  reqs[0].read.partition = kAreaPartition;
  enc = wire::EncodeRequests(reqs);
  dec = wire::DecodeRequests(enc.data(), enc.size());
  REQUIRE(dec.ok());
  CHECK((*dec)[0].read.length == 10);
  CHECK((*dec)[0].read.frame_at == 5000);
}

TEST_CASE("many pipelined reads between four ranks return the right bytes", "[net]") {
  Cluster c(4);
  std::atomic<int> ok{0}, bad{0};
  std::vector<std::thread> clients;
  for (int r = 0; r < 4; ++r) {
    clients.emplace_back([&, r] {
      std::vector<std::future<void>> waits;
      for (int i = 0; i < 200; ++i) {
        const int peer = (r + 1 + i % 3) % 4;
        PackRead read{static_cast<uint32_t>(i % 7), static_cast<uint64_t>(i) * 977,
                      static_cast<uint32_t>(1 + i * 37 % 5000)};
        auto p = std::make_shared<std::promise<void>>();
        waits.push_back(p->get_future());
        c.ranks[r]->Read(
            peer, read, In(5000ms), [&, p, peer, read](Result<std::span<const char>> res) {
              (res.ok() && std::ranges::equal(*res, testing::ExpectedBytes(peer, read)) ? ok
                                                                                        : bad)++;
              p->set_value();
            });
      }
      for (auto& w : waits) w.wait();
    });
  }
  for (auto& t : clients) t.join();
  CHECK(ok == 800);
  CHECK(bad == 0);
  // Reads queued together left as batches: fewer messages than reads is not
  // observable here, but every read was served exactly once.
  uint64_t served = 0;
  for (auto& t : c.ranks) served += t->counters()->reads_served;
  CHECK(served == 800);
}

TEST_CASE("reordered delivery still matches replies to their reads", "[net]") {
  Cluster c(3);
  c.fabric->SetReorder(true);
  c.fabric->SetDelay(200us);
  for (int i = 0; i < 100; ++i) {
    PackRead read{1, static_cast<uint64_t>(i), 64};
    auto res = ReadSync(*c.ranks[0], 1 + i % 2, read, In(5000ms));
    REQUIRE(res.ok());
    CHECK(*res == testing::ExpectedBytes(1 + i % 2, read));
  }
}

TEST_CASE("a dead peer times out at the deadline, never hangs", "[net]") {
  Cluster c(3);
  c.fabric->SetDead(2, true);
  const auto start = std::chrono::steady_clock::now();
  auto res = ReadSync(*c.ranks[0], 2, {0, 0, 10}, In(150ms));
  REQUIRE_FALSE(res.ok());
  CHECK(res.status().err() == ETIMEDOUT);
  CHECK(std::chrono::steady_clock::now() - start >= 150ms);
  CHECK(c.ranks[0]->counters()->timeouts == 1);
  // The live peer still answers.
  CHECK(ReadSync(*c.ranks[0], 1, {0, 0, 10}, In(2000ms)).ok());
}

TEST_CASE("server errors and oversized reads come back as errno", "[net]") {
  Cluster c(2);
  auto missing = ReadSync(*c.ranks[0], 1, {999, 0, 10}, In(2000ms));
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().err() == ENOENT);
  auto huge = ReadSync(*c.ranks[0], 1, {0, 0, kMaxReadBytes + 1}, In(2000ms));
  REQUIRE_FALSE(huge.ok());
  CHECK(huge.status().err() == EINVAL);
  auto self = ReadSync(*c.ranks[0], 0, {0, 0, 1}, In(2000ms));
  CHECK(self.status().err() == EINVAL);
  auto nobody = ReadSync(*c.ranks[0], 7, {0, 0, 1}, In(2000ms));
  CHECK(nobody.status().err() == EINVAL);
}

TEST_CASE("malformed and unexpected messages are dropped without harm", "[net]") {
  Cluster c(2);
  c.fabric->Inject(1, 0, MessageKind::kRequests, {'g', 'a', 'r', 'b', 'a', 'g', 'e'});
  c.fabric->Inject(1, 0, MessageKind::kReplies, {1, 2, 3});
  c.fabric->Inject(1, 0, MessageKind::kReplies, wire::EncodeReplies({{424242, 0, {'x'}}}));
  // Wait until rank 0 has seen all three (the fabric polls every 200 us).
  for (int i = 0; i < 500 && (c.ranks[0]->counters()->rejected_messages < 2 ||
                              c.ranks[0]->counters()->unknown_replies < 1);
       ++i) {
    std::this_thread::sleep_for(2ms);
  }
  CHECK(c.ranks[0]->counters()->rejected_messages == 2);
  CHECK(c.ranks[0]->counters()->unknown_replies == 1);
  auto res = ReadSync(*c.ranks[0], 1, {2, 8, 16}, In(2000ms));
  REQUIRE(res.ok());
  CHECK(*res == testing::ExpectedBytes(1, {2, 8, 16}));
}

TEST_CASE("stopping completes outstanding reads with an error", "[net]") {
  Cluster c(2);
  c.fabric->SetDead(1, true);
  auto p = std::make_shared<std::promise<Status>>();
  auto f = p->get_future();
  c.ranks[0]->Read(1, {0, 0, 1}, In(60000ms),
                   [p](Result<std::span<const char>> r) { p->set_value(r.status()); });
  c.ranks[0]->Stop();
  REQUIRE(f.wait_for(2s) == std::future_status::ready);
  CHECK(f.get().err() == ESHUTDOWN);
}

TEST_CASE("broadcast gives every rank the root's bytes", "[net]") {
  auto fabric = std::make_shared<LoopbackFabric>(4);
  std::vector<std::vector<char>> got(4);
  std::vector<std::thread> ts;
  std::vector<Status> st(4);  // Catch2's assertions are for the main thread only
  for (int r = 0; r < 4; ++r) {
    ts.emplace_back([&, r] {
      LoopbackTransport t(fabric, r);
      got[r] = r == 0 ? std::vector<char>{'m', 'a', 'n'} : std::vector<char>{};
      st[r] = t.Broadcast(&got[r], 0, In(5000ms));
    });
  }
  for (auto& t : ts) t.join();
  for (const Status& s : st) CHECK(s.ok());
  for (auto& g : got) CHECK(g == std::vector<char>{'m', 'a', 'n'});
}

TEST_CASE("a broadcast a rank never joins fails at its deadline", "[net]") {
  auto fabric = std::make_shared<LoopbackFabric>(3);
  std::vector<Status> st(2);
  std::vector<std::thread> ts;
  for (int r = 1; r < 3; ++r) {  // the root, rank 0, never comes
    ts.emplace_back([&, r] {
      LoopbackTransport t(fabric, r);
      std::vector<char> bytes;
      st[r - 1] = t.Broadcast(&bytes, 0, In(100ms));
    });
  }
  for (auto& t : ts) t.join();
  for (const Status& s : st) CHECK(s.err() == ETIMEDOUT);
  // And a root whose receivers never come.
  LoopbackTransport root(fabric, 0);
  std::vector<char> bytes{'x'};
  CHECK(root.Broadcast(&bytes, 0, In(50ms)).err() == ETIMEDOUT);
}

TEST_CASE("gather gives every rank every value and can be repeated", "[net]") {
  auto fabric = std::make_shared<LoopbackFabric>(4);
  std::vector<std::vector<int>> first(4), second(4);  // empty: that gather failed
  std::vector<std::thread> ts;
  for (int r = 0; r < 4; ++r) {
    ts.emplace_back([&, r] {
      LoopbackTransport t(fabric, r);
      if (auto a = t.Gather(10 + r, In(5000ms)); a.ok()) first[r] = *a;
      if (auto b = t.Gather(r == 2 ? -1 : 0, In(5000ms)); b.ok()) second[r] = *b;
    });
  }
  for (auto& t : ts) t.join();
  for (int r = 0; r < 4; ++r) {
    CHECK(first[r] == std::vector<int>{10, 11, 12, 13});
    CHECK(second[r] == std::vector<int>{0, 0, -1, 0});
  }
}

TEST_CASE("a gather a rank never joins fails at its deadline", "[net]") {
  auto fabric = std::make_shared<LoopbackFabric>(2);
  LoopbackTransport t(fabric, 0);
  auto r = t.Gather(0, In(50ms));
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().err() == ETIMEDOUT);
}

TEST_CASE("barrier waits for every rank and times out without one", "[net]") {
  Cluster c(3);
  std::vector<std::thread> ts;
  std::atomic<int> ok{0};
  for (int r = 0; r < 3; ++r) {
    ts.emplace_back([&, r] { ok += c.ranks[r]->Barrier(In(5000ms)).ok(); });
  }
  for (auto& t : ts) t.join();
  CHECK(ok == 3);
  // Only two of three arrive: both time out.
  ts.clear();
  std::atomic<int> timeouts{0};
  for (int r = 0; r < 2; ++r) {
    ts.emplace_back([&, r] { timeouts += c.ranks[r]->Barrier(In(100ms)).err() == ETIMEDOUT; });
  }
  for (auto& t : ts) t.join();
  CHECK(timeouts == 2);
}

TEST_CASE("Start's server_threads is how many peers' reads are served at once", "[net]") {
  for (int threads : {1, 3}) {
    auto fabric = std::make_shared<LoopbackFabric>(2);
    LoopbackTransport client(fabric, 0), server(fabric, 1);
    // Each read waits (up to 300 ms) for 3 to be inside at once.
    std::mutex mu;
    std::condition_variable cv;
    int inside = 0, most = 0;
    auto serve = [&](int, const PackRead& read) -> Result<std::vector<char>> {
      std::unique_lock lk(mu);
      most = std::max(most, ++inside);
      cv.notify_all();
      cv.wait_for(lk, 300ms, [&] { return inside >= 3; });
      --inside;
      return testing::ExpectedBytes(1, read);
    };
    REQUIRE(client.Start(serve, 1).ok());
    REQUIRE(server.Start(serve, threads).ok());
    std::vector<std::future<Result<std::vector<char>>>> reads;
    for (uint32_t i = 0; i < 3; ++i) {
      reads.push_back(std::async(std::launch::async, [&, i] {
        return ReadSync(client, 1, PackRead{i, 0, 64}, In(5000ms));
      }));
    }
    for (auto& r : reads) CHECK(r.get().ok());
    CHECK(most == threads);
    client.Stop();
    server.Stop();
  }
}

TEST_CASE("reads serve_now answers skip the server threads, the others still reach them", "[net]") {
  auto fabric = std::make_shared<LoopbackFabric>(2);
  LoopbackTransport client(fabric, 0), server(fabric, 1);
  std::atomic<int> served_later{0};
  auto serve = [&](int, const PackRead& read) -> Result<std::vector<char>> {
    served_later++;
    return testing::ExpectedBytes(1, read);
  };
  // Even partitions are "in the page cache": answered now; odd ones are not;
  // partition 998 is refused at once (an error answered now is still an answer).
  std::mutex mu;
  std::set<std::thread::id> now_threads;
  auto serve_now = [&](int, const PackRead& read) -> std::optional<Result<std::vector<char>>> {
    if (read.partition == 998) return Result<std::vector<char>>(Status::NotFound("not held"));
    if (read.partition % 2 != 0) return std::nullopt;
    std::lock_guard lk(mu);
    now_threads.insert(std::this_thread::get_id());
    return Result<std::vector<char>>(testing::ExpectedBytes(1, read));
  };
  REQUIRE(client.Start(serve, 1).ok());
  REQUIRE(server.Start(serve, 2, serve_now).ok());
  std::vector<std::future<Result<std::vector<char>>>> reads;
  for (uint32_t i = 0; i < 40; ++i) {
    reads.push_back(std::async(std::launch::async, [&, i] {
      return ReadSync(client, 1, PackRead{i, 100 * i, 1000 + i}, In(5000ms));
    }));
  }
  for (uint32_t i = 0; i < 40; ++i) {
    auto r = reads[i].get();
    REQUIRE(r.ok());
    CHECK(*r == testing::ExpectedBytes(1, PackRead{i, 100 * i, 1000 + i}));
  }
  // A read longer than kServeNowBytes goes to a server thread even if cached.
  auto big = ReadSync(client, 1, PackRead{2, 0, Endpoint::kServeNowBytes + 1}, In(5000ms));
  REQUIRE(big.ok());
  CHECK(big->size() == Endpoint::kServeNowBytes + 1);
  auto refused = ReadSync(client, 1, PackRead{998, 0, 10}, In(5000ms));
  CHECK(refused.status().err() == ENOENT);
  CHECK(served_later == 20 + 1);
  CHECK(server.counters()->served_at_once == 20);
  CHECK(server.counters()->reads_served == 41);
  CHECK(now_threads.size() == 1);  // the one thread that receives messages
  client.Stop();
  server.Stop();
}
