// Notices: the wire format of a notice batch, Publish's limits, and delivery
// on the loopback fabric - once per receiving rank, in each sender's order,
// never to the sender, nothing to or from a dead rank.
#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "fs/net/endpoint.hpp"
#include "fs/net/loopback_transport.hpp"
#include "fs/net/protocol.hpp"
#include "tests/fs/net/expected_bytes.hpp"

using namespace clairfs;
using namespace clairfs::fs;
using namespace std::chrono_literals;

namespace {

std::span<const char> Bytes(const std::string& s) { return {s.data(), s.size()}; }

// What one rank's notice handler was given, by sender.
class Inbox {
 public:
  void Add(int peer, std::span<const char> notice) {
    std::lock_guard lock(mu_);
    by_peer_[peer].emplace_back(notice.begin(), notice.end());
    ++total_;
    cv_.notify_all();
  }
  // True once `n` notices in all arrived, false at `limit`.
  bool WaitFor(size_t n, std::chrono::milliseconds limit) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, limit, [&] { return total_ >= n; });
  }
  std::map<int, std::vector<std::string>> by_peer() {
    std::lock_guard lock(mu_);
    return by_peer_;
  }
  size_t total() {
    std::lock_guard lock(mu_);
    return total_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<int, std::vector<std::string>> by_peer_;
  size_t total_ = 0;
};

struct NoticeCluster {
  explicit NoticeCluster(int n) : fabric(std::make_shared<LoopbackFabric>(n)), inboxes(n) {
    for (int r = 0; r < n; ++r) {
      ranks.push_back(std::make_unique<LoopbackTransport>(fabric, r));
      ranks.back()->OnNotice(
          [this, r](int peer, std::span<const char> notice) { inboxes[r].Add(peer, notice); });
      REQUIRE(ranks.back()
                  ->Start(
                      [r](int, const PackRead& read) -> Result<std::vector<char>> {
                        return testing::ExpectedBytes(r, read);
                      },
                      1)
                  .ok());
    }
  }
  ~NoticeCluster() {
    for (auto& t : ranks) t->Stop();
  }
  std::shared_ptr<LoopbackFabric> fabric;
  std::vector<Inbox> inboxes;  // by receiving rank; outlives the transports
  std::vector<std::unique_ptr<LoopbackTransport>> ranks;
};

std::string Notice(int sender, int i) {
  return "rank " + std::to_string(sender) + " wrote file " + std::to_string(i);
}

// Every notice of `sender` numbered [0, n), in order.
std::vector<std::string> AllOf(int sender, int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.push_back(Notice(sender, i));
  return out;
}

std::vector<char> Raw(std::initializer_list<std::pair<const void*, size_t>> parts) {
  std::vector<char> out;
  for (auto [p, n] : parts) {
    const char* c = static_cast<const char*>(p);
    out.insert(out.end(), c, c + n);
  }
  return out;
}

}  // namespace

TEST_CASE("notice batches round trip through the wire format", "[net][notice]") {
  const std::vector<std::vector<char>> notices{
      {'a'}, {'f', 'i', 'l', 'e', '\0', '7'}, std::vector<char>(kMaxNoticeBytes, 'x')};
  const auto enc = wire::EncodeNotices(notices);
  CHECK(enc.size() == sizeof(wire::BatchHeader) + 3 * sizeof(uint32_t) + 1 + 6 + kMaxNoticeBytes);
  auto dec = wire::DecodeNotices(enc.data(), enc.size());
  REQUIRE(dec.ok());
  REQUIRE(dec->size() == 3);
  for (size_t i = 0; i < 3; ++i) CHECK(std::ranges::equal((*dec)[i], notices[i]));
  // The decoded notices point into the message: no copy on the way in.
  CHECK((*dec)[0].data() == enc.data() + sizeof(wire::BatchHeader) + sizeof(uint32_t));

  const auto none = wire::EncodeNotices(std::vector<std::vector<char>>{});
  auto empty = wire::DecodeNotices(none.data(), none.size());
  REQUIRE(empty.ok());
  CHECK(empty->empty());
}

TEST_CASE("malformed notice batches are rejected whole", "[net][notice]") {
  const auto good = wire::EncodeNotices({{'a', 'b'}, {'c'}});
  REQUIRE(wire::DecodeNotices(good.data(), good.size()).ok());
  const auto header = [](uint32_t magic, uint32_t count) {
    return wire::BatchHeader{magic, count};
  };

  SECTION("truncated") {
    for (size_t n = 0; n < good.size(); ++n) CHECK_FALSE(wire::DecodeNotices(good.data(), n).ok());
  }
  SECTION("bad magic") {
    const auto h = header(wire::kReplyMagic, 2);
    auto bad = good;
    std::memcpy(bad.data(), &h, sizeof h);
    CHECK_FALSE(wire::DecodeNotices(bad.data(), bad.size()).ok());
  }
  SECTION("a count over the batch limit, even with the bytes for it") {
    const auto h = header(wire::kNoticeMagic, wire::kMaxBatch + 1);
    const uint32_t one = 1;
    std::vector<char> bad = Raw({{&h, sizeof h}});
    for (uint32_t i = 0; i <= wire::kMaxBatch; ++i) {
      bad.insert(bad.end(), reinterpret_cast<const char*>(&one),
                 reinterpret_cast<const char*>(&one) + sizeof one);
      bad.push_back('n');
    }
    CHECK_FALSE(wire::DecodeNotices(bad.data(), bad.size()).ok());
  }
  SECTION("a count the bytes cannot hold") {
    const auto h = header(wire::kNoticeMagic, 3);
    auto bad = good;
    std::memcpy(bad.data(), &h, sizeof h);
    CHECK_FALSE(wire::DecodeNotices(bad.data(), bad.size()).ok());
  }
  SECTION("a notice of zero bytes") {
    const auto h = header(wire::kNoticeMagic, 2);
    const uint32_t zero = 0, one = 1;
    const char c = 'c';
    const auto bad = Raw({{&h, sizeof h}, {&zero, 4}, {&one, 4}, {&c, 1}});
    CHECK_FALSE(wire::DecodeNotices(bad.data(), bad.size()).ok());
  }
  SECTION("a notice over kMaxNoticeBytes, even with the bytes for it") {
    const auto h = header(wire::kNoticeMagic, 1);
    const uint32_t big = kMaxNoticeBytes + 1;
    std::vector<char> body(big, 'b');
    const auto bad = Raw({{&h, sizeof h}, {&big, 4}, {body.data(), body.size()}});
    CHECK_FALSE(wire::DecodeNotices(bad.data(), bad.size()).ok());
  }
  SECTION("a length past the end") {
    auto bad = good;
    const uint32_t past = 3;  // the last notice claims 3 bytes, 1 follows
    std::memcpy(bad.data() + bad.size() - 1 - sizeof past, &past, sizeof past);
    CHECK_FALSE(wire::DecodeNotices(bad.data(), bad.size()).ok());
  }
  SECTION("trailing bytes") {
    auto bad = good;
    bad.push_back('z');
    CHECK_FALSE(wire::DecodeNotices(bad.data(), bad.size()).ok());
  }
}

TEST_CASE("Publish refuses empty and oversized notices, and any outside Start..Stop",
          "[net][notice]") {
  auto fabric = std::make_shared<LoopbackFabric>(2);
  LoopbackTransport idle(fabric, 0);
  CHECK(idle.Publish(Bytes("early")).err() == ECANCELED);

  NoticeCluster c(2);
  CHECK(c.ranks[0]->Publish({}).err() == EINVAL);
  const std::string max(kMaxNoticeBytes, 'm');
  CHECK(c.ranks[0]->Publish(Bytes(max)).ok());
  CHECK(c.ranks[0]->Publish(Bytes(max + "!")).err() == EINVAL);
  REQUIRE(c.inboxes[1].WaitFor(1, 5000ms));
  CHECK(c.inboxes[1].by_peer()[0] == std::vector<std::string>{max});
  CHECK(c.ranks[0]->counters()->notices_sent == 1);  // the refused ones never queued

  c.ranks[0]->Stop();
  CHECK(c.ranks[0]->Publish(Bytes("late")).err() == ECANCELED);
}

TEST_CASE("three ranks' interleaved notices arrive once each, in order, never at the sender",
          "[net][notice]") {
  const bool faults = GENERATE(false, true);
  CAPTURE(faults);
  constexpr int kRanks = 3, kNotices = 100;
  NoticeCluster c(kRanks);
  if (faults) {  // requests may be reordered; notices must still keep their order
    c.fabric->SetReorder(true);
    c.fabric->SetDelay(200us);
  }
  // Catch's assertions are for the test's own thread: the publishers count.
  std::atomic<int> failed{0};
  std::vector<std::thread> publishers;
  for (int r = 0; r < kRanks; ++r) {
    publishers.emplace_back([&c, &failed, r] {
      for (int i = 0; i < kNotices; ++i) {
        if (!c.ranks[r]->Publish(Bytes(Notice(r, i))).ok()) failed++;
        // Reads among the notices: they share the fabric with requests and replies.
        const auto deadline = std::chrono::steady_clock::now() + 5s;
        if (i % 10 == 0 && !ReadSync(*c.ranks[r], (r + 1) % kRanks, {1, 0, 64}, deadline).ok()) {
          failed++;
        }
      }
    });
  }
  for (auto& t : publishers) t.join();
  REQUIRE(failed == 0);
  for (int r = 0; r < kRanks; ++r) {
    REQUIRE(c.inboxes[r].WaitFor((kRanks - 1) * kNotices, 5000ms));
  }
  std::this_thread::sleep_for(20ms);  // room for a duplicate to show
  uint64_t sent = 0, received = 0;
  for (int r = 0; r < kRanks; ++r) {
    const auto got = c.inboxes[r].by_peer();
    CHECK(got.count(r) == 0);
    for (int s = 0; s < kRanks; ++s) {
      if (s != r) CHECK(got.at(s) == AllOf(s, kNotices));
    }
    CHECK(c.ranks[r]->counters()->notices_sent == (kRanks - 1) * kNotices);
    CHECK(c.ranks[r]->counters()->notices_received == (kRanks - 1) * kNotices);
    CHECK(c.ranks[r]->counters()->rejected_messages == 0);
    sent += c.ranks[r]->counters()->notices_sent;
    received += c.ranks[r]->counters()->notices_received;
  }
  CHECK(sent == received);
}

TEST_CASE("a dead rank's notices vanish and it receives none, the others are unaffected",
          "[net][notice]") {
  constexpr int kNotices = 20;
  NoticeCluster c(3);
  c.fabric->SetDead(2, true);
  for (int i = 0; i < kNotices; ++i) {
    for (int r = 0; r < 3; ++r) REQUIRE(c.ranks[r]->Publish(Bytes(Notice(r, i))).ok());
  }
  REQUIRE(c.inboxes[0].WaitFor(kNotices, 5000ms));
  REQUIRE(c.inboxes[1].WaitFor(kNotices, 5000ms));
  std::this_thread::sleep_for(50ms);  // room for anything that should not come
  CHECK(c.inboxes[0].by_peer() == std::map<int, std::vector<std::string>>{{1, AllOf(1, kNotices)}});
  CHECK(c.inboxes[1].by_peer() == std::map<int, std::vector<std::string>>{{0, AllOf(0, kNotices)}});
  CHECK(c.inboxes[2].total() == 0);
  // Sent counts what left the rank's queues, whether a peer was alive or not.
  for (int r = 0; r < 3; ++r) CHECK(c.ranks[r]->counters()->notices_sent == 2 * kNotices);
  CHECK(c.ranks[0]->counters()->notices_received == kNotices);
  CHECK(c.ranks[1]->counters()->notices_received == kNotices);
  CHECK(c.ranks[2]->counters()->notices_received == 0);
}

TEST_CASE("a notice burst over the batch limit leaves in several batches, in order",
          "[net][notice]") {
  const int n = 3 * static_cast<int>(wire::kMaxBatch) + 7;
  NoticeCluster c(2);
  for (int i = 0; i < n; ++i) REQUIRE(c.ranks[0]->Publish(Bytes(Notice(0, i))).ok());
  REQUIRE(c.inboxes[1].WaitFor(static_cast<size_t>(n), 5000ms));
  CHECK(c.inboxes[1].by_peer()[0] == AllOf(0, n));
}

TEST_CASE("a malformed notice batch hands over none of its notices", "[net][notice]") {
  NoticeCluster c(2);
  auto cut = wire::EncodeNotices({{'o', 'k'}, {'l', 'o', 's', 't'}});
  cut.pop_back();  // the first notice is whole, the batch is not
  c.fabric->Inject(1, 0, MessageKind::kNotices, cut);
  c.fabric->Inject(1, 0, MessageKind::kNotices, {'j', 'u', 'n', 'k'});
  c.fabric->Inject(1, 0, MessageKind::kNotices, wire::EncodeNotices({{'n', 'e', 'x', 't'}}));
  REQUIRE(c.inboxes[0].WaitFor(1, 5000ms));
  CHECK(c.inboxes[0].by_peer() == std::map<int, std::vector<std::string>>{{1, {"next"}}});
  CHECK(c.ranks[0]->counters()->rejected_messages == 2);
  CHECK(c.ranks[0]->counters()->notices_received == 1);
}

TEST_CASE("without a notice handler, peers' notices are counted and dropped", "[net][notice]") {
  auto fabric = std::make_shared<LoopbackFabric>(2);
  Inbox inbox;
  LoopbackTransport quiet(fabric, 0), loud(fabric, 1);
  loud.OnNotice([&inbox](int peer, std::span<const char> n) { inbox.Add(peer, n); });
  const auto serve = [](int, const PackRead& r) -> Result<std::vector<char>> {
    return testing::ExpectedBytes(0, r);
  };
  REQUIRE(quiet.Start(serve, 1).ok());
  REQUIRE(loud.Start(serve, 1).ok());
  REQUIRE(loud.Publish(Bytes("to nobody in particular")).ok());
  REQUIRE(quiet.Publish(Bytes("back")).ok());
  REQUIRE(inbox.WaitFor(1, 5000ms));
  for (int i = 0; i < 500 && quiet.counters()->notices_received == 0; ++i) {
    std::this_thread::sleep_for(2ms);
  }
  CHECK(quiet.counters()->notices_received == 1);
  quiet.Stop();
  loud.Stop();
}

TEST_CASE(
    "notices beyond a stalled link's bound are dropped and counted, queued again once it moves",
    "[net][notice]") {
  // No progress thread: nothing leaves the queues but through TakeOutgoing.
  const auto serve = [](int, const PackRead& r) -> Result<std::vector<char>> {
    return testing::ExpectedBytes(0, r);
  };
  Endpoint e(/*rank=*/0, /*size=*/3, serve, /*server_threads=*/0);
  const int bound = static_cast<int>(Endpoint::kMaxQueuedNotices);
  for (int i = 0; i < bound; ++i) REQUIRE(e.Publish(Bytes(Notice(0, i))) == 0);
  CHECK(e.Publish(Bytes("one too many")) == 2);  // for both peers
  CHECK(e.counters().notices_dropped == 2);
  CHECK(e.counters().notices_sent == 2u * bound);
  // The links move again: each peer gets every queued notice once, in order,
  // and the next notice after them.
  std::map<int, std::vector<std::string>> got;
  const auto take = [&] {
    for (auto& m : e.TakeOutgoing()) {
      REQUIRE(m.kind == MessageKind::kNotices);
      auto notices = wire::DecodeNotices(m.bytes.data(), m.bytes.size());
      REQUIRE(notices.ok());
      for (auto n : *notices) got[m.peer].emplace_back(n.data(), n.size());
    }
  };
  take();
  CHECK(e.Publish(Bytes("after")) == 0);
  for (int loops = 0; static_cast<int>(got[2].size()) < bound + 1 && loops < 10000; ++loops) take();
  auto want = AllOf(0, bound);
  want.push_back("after");
  CHECK(got == std::map<int, std::vector<std::string>>{{1, want}, {2, want}});
  CHECK(e.counters().notices_dropped == 2);
  e.Stop();
}

TEST_CASE("a notice sent to one peer reaches it alone, in order with what was published",
          "[net][notice]") {
  NoticeCluster c(3);
  REQUIRE(c.ranks[0]->Publish(Bytes("to all")).ok());
  REQUIRE(c.ranks[0]->Send(2, Bytes("to 2")).ok());
  REQUIRE(c.ranks[1]->Send(2, Bytes("from 1")).ok());
  REQUIRE(c.ranks[0]->Send(1, Bytes("to 1")).ok());
  CHECK(c.ranks[0]->Send(0, Bytes("to myself")).err() == EINVAL);
  CHECK(c.ranks[0]->Send(3, Bytes("to nobody")).err() == EINVAL);
  CHECK(c.ranks[0]->Send(-1, Bytes("to nobody")).err() == EINVAL);
  CHECK(c.ranks[0]->Send(1, {}).err() == EINVAL);
  REQUIRE(c.inboxes[1].WaitFor(2, 5000ms));
  REQUIRE(c.inboxes[2].WaitFor(3, 5000ms));
  std::this_thread::sleep_for(50ms);  // room for anything that should not come
  using Got = std::map<int, std::vector<std::string>>;
  CHECK(c.inboxes[0].total() == 0);
  CHECK(c.inboxes[1].by_peer() == Got{{0, {"to all", "to 1"}}});
  CHECK(c.inboxes[2].by_peer() == Got{{0, {"to all", "to 2"}}, {1, {"from 1"}}});
  CHECK(c.ranks[0]->counters()->notices_sent == 4);
}
