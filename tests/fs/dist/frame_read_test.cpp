// Peers' frame reads over the loopback transport: one round trip per frame,
// the next frames of a sequential reader asked for ahead, frame tables fetched
// once and kept within their budget, damaged answers and
// dead peers falling back to the dataset's pack, malformed requests refused.
#include <catch2/catch.hpp>
#include <cstring>

#include "fs/dist/distributed_pack_store.hpp"
#include "fs/dist/ownership.hpp"
#include "fs/net/loopback_transport.hpp"
#include "fs/store/payload_source.hpp"
#include "partitioner/format/layout.hpp"
#include "tests/fs/dist/dist_fixture.hpp"

using namespace clairfs;
using namespace clairfs::fs;
using clairfs::fs::testing::Dataset;
using clairfs::fs::testing::Ranks;
using namespace std::chrono_literals;

namespace {

// The framed files of `d` whose partition only rank 1 of 2 holds (replicas
// 1), with their bytes.
std::vector<std::pair<uint32_t, std::string>> FramedOnRank1(const Dataset& d) {
  const Ownership own(d.manifest->partition_count(), d.manifest->header().replicas, 2);
  std::vector<std::pair<uint32_t, std::string>> out;
  for (const auto& [rel, data] : d.files) {
    const uint32_t node = *d.manifest->Resolve(rel);
    const format::NodeRecord& r = d.manifest->node(node);
    if (r.codec == static_cast<uint8_t>(format::Codec::kFramed) && !own.Holds(0, r.partition)) {
      out.emplace_back(node, data);
    }
  }
  return out;
}

// Reads file `node` the way the FileReader does, one block (a frame) per
// read; "" or what went wrong.
std::string ReadByFrames(const Dataset& d, PackPayloadSource* source, uint32_t node,
                         const std::string& data) {
  const uint64_t fs = d.manifest->header().frame_size;
  std::vector<char> got(fs);
  for (uint64_t off = 0; off < data.size(); off += fs) {
    auto n = source->Read(node, off, fs, got.data());
    if (!n.ok()) return n.status().ToString();
    if (*n != std::min<uint64_t>(fs, data.size() - off) ||
        std::memcmp(got.data(), data.data() + off, *n) != 0) {
      return d.manifest->Path(node) + ": wrong bytes at " + std::to_string(off);
    }
  }
  return "";
}

}  // namespace

TEST_CASE("a framed file from a peer: one round trip per frame, its table fetched once", "[dist]") {
  Dataset d(4, 1);
  Ranks ranks(d, 2);
  const auto nodes = FramedOnRank1(d);
  REQUIRE(nodes.size() >= 3);
  PackPayloadSource source(d.manifest, ranks.stores[0].get());
  const EndpointCounters& sent = *ranks.transports[0]->counters();
  const DistCounters& reader = ranks.stores[0]->counters();
  const EndpointCounters& owner = *ranks.transports[1]->counters();  // what rank 1 answered
  for (const auto& [node, data] : nodes) {
    const format::NodeRecord& r = d.manifest->node(node);
    const uint64_t frames =
        (r.size + d.manifest->header().frame_size - 1) / d.manifest->header().frame_size;
    const uint64_t table = sizeof(format::FrameTableHeader) + frames * sizeof(format::FrameEntry);
    // First pass: the table travels with the first frame, each frame once.
    uint64_t reads0 = sent.reads_sent, served0 = owner.bytes_served, peer0 = reader.peer_bytes;
    CHECK(ReadByFrames(d, &source, node, data) == "");
    CHECK(sent.reads_sent - reads0 == frames);
    CHECK(owner.bytes_served - served0 == r.stored_size);
    CHECK(reader.peer_bytes - peer0 == r.stored_size);
    // Second pass: the table is known, only the frames travel.
    reads0 = sent.reads_sent, served0 = owner.bytes_served;
    CHECK(ReadByFrames(d, &source, node, data) == "");
    CHECK(sent.reads_sent - reads0 == frames);
    CHECK(owner.bytes_served - served0 == r.stored_size - table);
  }
  CHECK(reader.fallback_reads == 0);
  CHECK(reader.damaged_rereads == 0);
  // The owner had its pack open and cached by then: small frames went out at
  // once, with no server thread.
  CHECK(ranks.transports[1]->counters()->served_at_once > 0);
}

// Two ranks over a dataset with large files, and one of those (Dataset::
// kLargeFrames frames) that only rank 1 holds, read on rank 0 through `source`
// (frames_ahead as given).
struct LargeOnRank1 {
  explicit LargeOnRank1(DistOptions opt = {},
                        uint64_t frames_ahead = PackPayloadSource::kFramesAhead)
      : d(4, 1, 4),
        ranks(d, 2, opt),
        source(d.manifest, ranks.stores[0].get(), PackPayloadSource::kTableCacheBytes,
               frames_ahead) {
    for (auto& [n, bytes] : FramedOnRank1(d)) {
      if (bytes.size() >= 100000) node = n, data = bytes;
    }
    REQUIRE(!data.empty());
  }
  const PeerAheadCounters& ahead() const { return ranks.stores[0]->ahead_counters(); }
  Dataset d;
  Ranks ranks;
  PackPayloadSource source;
  uint32_t node = 0;
  std::string data;
  const uint64_t fs = d.manifest->header().frame_size;
};

TEST_CASE("a peer's file read frame after frame has its next frames asked for ahead", "[dist]") {
  LargeOnRank1 t;  // 4 frames ahead
  auto& [d, ranks, source, node, data, fs] = t;
  const uint64_t frames = (data.size() + fs - 1) / fs;
  REQUIRE(frames == Dataset::kLargeFrames);
  const PeerAheadCounters& ahead = t.ahead();
  const EndpointCounters& sent = *ranks.transports[0]->counters();
  const DistCounters& reader = ranks.stores[0]->counters();
  std::vector<char> got(fs);
  // Frame 0 brings the table; frame 1 follows it, so frames 2-5 are asked for
  // at once: four reads in flight before the reader wants the first of them.
  REQUIRE(source.Read(node, 0, fs, got.data()).ok());
  CHECK(ahead.reads == 0);
  REQUIRE(source.Read(node, fs, fs, got.data()).ok());
  CHECK(ahead.reads == 4);
  CHECK(std::memcmp(got.data(), data.data() + fs, fs) == 0);
  // The rest of the file: every frame from a read asked for ahead, each asked
  // for once, every byte right.
  for (uint64_t f = 2; f < frames; ++f) {
    const uint64_t off = f * fs;
    auto n = source.Read(node, off, fs, got.data());
    REQUIRE(n.ok());
    REQUIRE(*n == std::min<uint64_t>(fs, data.size() - off));
    REQUIRE(std::memcmp(got.data(), data.data() + off, *n) == 0);
  }
  CHECK(ahead.reads == frames - 2);
  CHECK(ahead.taken == frames - 2);
  CHECK(ahead.dropped == 0);
  CHECK(ahead.failed == 0);
  CHECK(sent.reads_sent == frames);  // nothing asked twice, nothing past the end
  CHECK(reader.peer_bytes == d.manifest->node(node).stored_size);
  // Hints given by the reads of frames 1 to 35: the last ones had nothing new to ask.
  CHECK(source.ahead_hints() == frames - 1 - PackPayloadSource::kFramesAhead);

  SECTION("a reader that jumps asks for nothing ahead") {
    const uint64_t reads0 = ahead.reads;
    for (uint64_t f = 0; f < frames; f += 2) {  // 0, 2, 4, ... then 1, 3, 5, ...
      REQUIRE(source.Read(node, f * fs, fs, got.data()).ok());
    }
    for (uint64_t f = 1; f < frames; f += 2) {
      REQUIRE(source.Read(node, f * fs, fs, got.data()).ok());
      REQUIRE(std::memcmp(got.data(), data.data() + f * fs,
                          std::min<uint64_t>(fs, data.size() - f * fs)) == 0);
    }
    CHECK(ahead.reads == reads0);
  }
  SECTION("frames_ahead 0 asks for nothing ahead") {
    LargeOnRank1 off({}, 0);
    CHECK(ReadByFrames(off.d, &off.source, off.node, off.data) == "");
    CHECK(off.ahead().reads == 0);
  }
}

TEST_CASE("a reader's frames answered out of order keep the frames ahead coming", "[dist]") {
  LargeOnRank1 t;
  auto& [d, ranks, source, node, data, fs] = t;
  const uint64_t frames = Dataset::kLargeFrames;
  const PeerAheadCounters& ahead = t.ahead();
  // Two READs of one reader in flight at once, the later one answered first:
  // frames 0, 1, then 3, 2, 5, 4, ... 39, 38.
  std::vector<uint64_t> order{0, 1};
  for (uint64_t f = 2; f + 1 < frames; f += 2) order.insert(order.end(), {f + 1, f});
  std::vector<char> got(fs);
  for (uint64_t f : order) {
    auto n = source.Read(node, f * fs, fs, got.data());
    REQUIRE(n.ok());
    REQUIRE(std::memcmp(got.data(), data.data() + f * fs, *n) == 0);
  }
  CHECK(ahead.taken == frames - 2);  // every frame after the first two came ahead
  CHECK(ahead.reads == frames - 2);
  CHECK(ranks.transports[0]->counters()->reads_sent == frames);
}

TEST_CASE("frames asked of a peer that dies on the way are read from the dataset's pack",
          "[dist]") {
  DistOptions opt;
  opt.peer_timeout = 300ms;
  LargeOnRank1 t(opt);
  auto& [d, ranks, source, node, data, fs] = t;
  std::vector<char> got(fs);
  REQUIRE(source.Read(node, 0, fs, got.data()).ok());
  ranks.fabric->SetDelay(40ms);  // the reads asked for ahead are still on their way...
  REQUIRE(source.Read(node, fs, fs, got.data()).ok());
  ranks.fabric->SetDead(1, true);  // ...when their owner dies
  for (uint64_t off = 2 * fs; off < data.size(); off += fs) {
    auto n = source.Read(node, off, fs, got.data());
    REQUIRE(n.ok());
    REQUIRE(std::memcmp(got.data(), data.data() + off, *n) == 0);
  }
  const PeerAheadCounters& ahead = ranks.stores[0]->ahead_counters();
  const DistCounters& c = ranks.stores[0]->counters();
  CHECK(ahead.reads == 4);   // then rank 1 is a suspect: nothing more asked of it
  CHECK(ahead.failed >= 1);  // the ones a reader waited for, timed out
  CHECK(ahead.taken == 0);
  CHECK(c.peer_failures >= 1);
  CHECK(c.fallback_reads >= Dataset::kLargeFrames - 2);
}

TEST_CASE("frame tables are kept within their budget, the oldest dropped first", "[dist]") {
  Dataset d(4, 1);
  Ranks ranks(d, 2);
  const auto nodes = FramedOnRank1(d);
  REQUIRE(nodes.size() >= 2);
  const auto& [a, a_data] = nodes[0];
  const auto& [b, b_data] = nodes[1];
  // Room for one small table: reading b drops a's, so a's table travels again.
  PackPayloadSource source(d.manifest, ranks.stores[0].get(), 200);
  const EndpointCounters& owner = *ranks.transports[1]->counters();  // what rank 1 answered
  const uint64_t a_stored = d.manifest->node(a).stored_size;
  uint64_t served0 = owner.bytes_served;
  CHECK(ReadByFrames(d, &source, a, a_data) == "");
  CHECK(owner.bytes_served - served0 == a_stored);
  CHECK(ReadByFrames(d, &source, b, b_data) == "");
  served0 = owner.bytes_served;
  CHECK(ReadByFrames(d, &source, a, a_data) == "");
  CHECK(owner.bytes_served - served0 == a_stored);  // table included again
  // No room at all: every read is still right, each first frame with its table.
  PackPayloadSource none(d.manifest, ranks.stores[0].get(), 0);
  for (const auto& [node, data] : nodes) CHECK(ReadByFrames(d, &none, node, data) == "");
}

TEST_CASE("a frame read from a peer is verified: a damaged table or frame is read again",
          "[dist]") {
  Dataset d(4, 1);
  const Ownership own(4, 1, 2);
  const auto nodes = FramedOnRank1(d);
  REQUIRE(!nodes.empty());
  SECTION("a frame damaged on the way") {
    Ranks ranks(d, 2);
    ranks.fabric->SetDamageReplies(1, true);
    PackPayloadSource source(d.manifest, ranks.stores[0].get());
    for (const auto& [node, data] : nodes) CHECK(ReadByFrames(d, &source, node, data) == "");
    CHECK(ranks.stores[0]->counters().damaged_rereads >= nodes.size());
  }
  SECTION("a frame table damaged on the owner's disk") {
    Stager stager(d.out(), d.root + "/ssd1", d.manifest, own.PartitionsOf(1));
    stager.Start();
    stager.Wait();
    {
      std::fstream f(d.root + "/ssd1/part-00001", std::ios::in | std::ios::out | std::ios::binary);
      std::fstream g(d.root + "/ssd1/part-00003", std::ios::in | std::ios::out | std::ios::binary);
      for (const auto& [node, data] : nodes) {
        const format::NodeRecord& r = d.manifest->node(node);
        std::fstream& h = r.partition == 1 ? f : g;
        h.seekp(r.offset + sizeof(format::FrameTableHeader) + 8);  // frame 0's checksum
        h.put('\x55');
      }
    }
    Ranks ranks(d, 2, {}, {nullptr, &stager});
    PackPayloadSource source(d.manifest, ranks.stores[0].get());
    for (const auto& [node, data] : nodes) CHECK(ReadByFrames(d, &source, node, data) == "");
    CHECK(ranks.stores[0]->counters().damaged_rereads == nodes.size());  // once per file
    CHECK(ranks.stores[0]->counters().peer_reads > 0);  // later frames did come from rank 1
  }
}

TEST_CASE("a frame read from a dead peer falls back to the dataset's pack", "[dist]") {
  Dataset d(4, 1);
  DistOptions opt;
  opt.peer_timeout = 100ms;
  Ranks ranks(d, 2, opt);
  ranks.fabric->SetDead(1, true);
  const auto nodes = FramedOnRank1(d);
  REQUIRE(!nodes.empty());
  PackPayloadSource source(d.manifest, ranks.stores[0].get());
  for (const auto& [node, data] : nodes) CHECK(ReadByFrames(d, &source, node, data) == "");
  const DistCounters& c = ranks.stores[0]->counters();
  CHECK(c.peer_failures == 1);  // then rank 1 is a suspect, skipped
  CHECK(c.peer_reads == 0);
  CHECK(c.fallback_reads > 0);
}

TEST_CASE("a frame read is served whole, at once when cached, and refused when malformed",
          "[dist]") {
  Dataset d(4, 1);
  Ranks ranks(d, 2);
  const auto nodes = FramedOnRank1(d);
  REQUIRE(!nodes.empty());
  const format::NodeRecord& r = d.manifest->node(nodes[0].first);
  DistributedPackStore& owner = *ranks.stores[1];
  const PackRead read{r.partition, r.offset, 0, r.size - 1};  // the last frame
  CHECK_FALSE(owner.ServeIfCached(0, read).has_value());      // pack not open yet
  auto served = owner.Serve(0, read);
  REQUIRE(served.ok());
  const uint64_t frames =
      (r.size + d.manifest->header().frame_size - 1) / d.manifest->header().frame_size;
  CHECK(served->size() > sizeof(format::FrameTableHeader) + frames * sizeof(format::FrameEntry));
  auto now = owner.ServeIfCached(0, read);
  REQUIRE(now.has_value());
  REQUIRE(now->ok());
  CHECK(**now == *served);
  // No frame there, no table there, not this rank's partition.
  CHECK_FALSE(owner.Serve(0, {r.partition, r.offset, 0, r.size + 8192 * 4}).ok());
  CHECK_FALSE(owner.Serve(0, {r.partition, 0, 0, 0}).ok());
  CHECK(owner.Serve(0, {0, r.offset, 0, 0}).status().IsNotFound());
}
