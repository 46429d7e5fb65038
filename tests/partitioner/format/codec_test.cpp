// PayloadEncoder's codec choice and PayloadDecoder reads at any offset, checked
// against the source bytes and against libzstd itself.
#include "partitioner/format/codec.hpp"

#include <zstd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "partitioner/format/checksum.hpp"
#include "tests/support/format_fixture.hpp"

namespace clairfs::format {
namespace {

using testing::MixedFrames;
using testing::RandomBytes;
using testing::TextBytes;

EncodedPayload Encode(const std::vector<char>& data, const EncodeOptions& options) {
  PayloadEncoder encoder(options);
  EncodedPayload out;
  REQUIRE(encoder.Encode(data.data(), data.size(), &out).ok());
  return out;
}

EncodeOptions Frames(uint32_t frame_size) {
  EncodeOptions o;
  o.frame_size = frame_size;
  return o;
}

// A payload stored in a pack-like buffer: 32 bytes before it and 64 random
// bytes after it, so a read that strays outside the payload returns wrong
// bytes instead of failing.
struct Stored {
  std::unique_ptr<MemoryFile> pack;
  PayloadLocation loc;
};

Stored Store(const std::vector<char>& data, const EncodedPayload& enc) {
  std::vector<char> bytes = RandomBytes(32, 7);
  const std::vector<char>& payload = enc.codec == Codec::kRaw ? data : enc.bytes;
  bytes.insert(bytes.end(), payload.begin(), payload.end());
  std::vector<char> tail = RandomBytes(64, 8);
  bytes.insert(bytes.end(), tail.begin(), tail.end());
  return {std::make_unique<MemoryFile>("mem-pack", std::move(bytes)),
          PayloadLocation{data.size(), 32, payload.size(), enc.checksum, enc.codec}};
}

// Reads [offset, offset + length) and returns "" or what went wrong.
std::string CheckRead(PayloadDecoder* decoder, const Stored& s, const std::vector<char>& data,
                      uint64_t offset, size_t length) {
  const std::string where = "read(" + std::to_string(offset) + ", " + std::to_string(length) + ")";
  std::vector<char> dst(length + 16, '\x5a');
  auto n = decoder->Read(*s.pack, s.loc, offset, length, dst.data(), "file.bin");
  if (!n.ok()) return where + ": " + n.status().ToString();
  const size_t want = offset >= data.size() ? 0 : std::min<uint64_t>(length, data.size() - offset);
  if (*n != want)
    return where + " returned " + std::to_string(*n) + ", want " + std::to_string(want);
  if (!std::equal(dst.begin(), dst.begin() + want, data.begin() + offset)) {
    return where + ": wrong bytes";
  }
  if (std::any_of(dst.begin() + want, dst.end(), [](char c) { return c != '\x5a'; })) {
    return where + ": wrote past what it returned";
  }
  return "";
}

std::vector<char> ReadAll(const Stored& s) {
  PayloadDecoder decoder;
  std::vector<char> out;
  REQUIRE(decoder.ReadAll(*s.pack, s.loc, &out, "file.bin").ok());
  return out;
}

TEST_CASE("Encoder stores incompressible bytes raw", "[codec]") {
  const std::vector<char> data = RandomBytes(10000, 1);
  EncodedPayload enc = Encode(data, EncodeOptions{});
  CHECK(enc.codec == Codec::kRaw);
  CHECK(enc.bytes.empty());
  CHECK(enc.checksum == Checksum(data.data(), data.size()));
  CHECK(testing::Mismatch(ReadAll(Store(data, enc)), data) == "");
}

TEST_CASE("Encoder compresses text into one zstd frame", "[codec]") {
  const std::vector<char> data = TextBytes(10000, 2);
  EncodedPayload enc = Encode(data, EncodeOptions{});
  REQUIRE(enc.codec == Codec::kZstd);
  CHECK(enc.bytes.size() < data.size() / 2);
  CHECK(enc.checksum == Checksum(enc.bytes.data(), enc.bytes.size()));
  // libzstd itself decodes it.
  CHECK(ZSTD_getFrameContentSize(enc.bytes.data(), enc.bytes.size()) == data.size());
  std::vector<char> plain(data.size());
  CHECK(ZSTD_decompress(plain.data(), plain.size(), enc.bytes.data(), enc.bytes.size()) ==
        data.size());
  CHECK(testing::Mismatch(plain, data) == "");
  CHECK(testing::Mismatch(ReadAll(Store(data, enc)), data) == "");
}

TEST_CASE("Encoder with zstd level 0 stores everything raw", "[codec]") {
  EncodeOptions o = Frames(4096);
  o.zstd_level = 0;
  for (size_t size : {size_t{100}, size_t{4096}}) {
    INFO("size " << size);
    const std::vector<char> data = TextBytes(size, 3);
    EncodedPayload enc = Encode(data, o);
    CHECK(enc.codec == Codec::kRaw);
    CHECK(enc.bytes.empty());
    CHECK(enc.checksum == Checksum(data.data(), data.size()));
  }
  // Larger than a frame: framed, every frame raw.
  const std::vector<char> big = TextBytes(100000, 3);
  EncodedPayload enc = Encode(big, o);
  REQUIRE(enc.codec == Codec::kFramed);
  for (uint32_t i = 0; i < 25; ++i) {
    FrameEntry e;
    std::memcpy(&e, enc.bytes.data() + sizeof(FrameTableHeader) + i * sizeof e, sizeof e);
    CHECK(e.codec == static_cast<uint8_t>(Codec::kRaw));
  }
}

TEST_CASE("Encoder keeps zstd only when it saves min_saving", "[codec]") {
  std::vector<char> data = TextBytes(4000, 4);
  std::vector<char> noise = RandomBytes(4000, 5);
  data.insert(data.end(), noise.begin(), noise.end());
  std::vector<char> z(ZSTD_compressBound(data.size()));
  const size_t n = ZSTD_compress(z.data(), z.size(), data.data(), data.size(), 3);
  REQUIRE_FALSE(ZSTD_isError(n));
  const double saving = 1.0 - static_cast<double>(n) / static_cast<double>(data.size());
  REQUIRE(saving > 0.2);
  REQUIRE(saving < 0.8);
  EncodeOptions o;
  o.min_saving = saving - 0.05;
  EncodedPayload kept = Encode(data, o);
  CHECK(kept.codec == Codec::kZstd);
  CHECK(kept.bytes.size() == n);
  o.min_saving = saving + 0.05;
  EncodedPayload dropped = Encode(data, o);
  CHECK(dropped.codec == Codec::kRaw);
  CHECK(dropped.bytes.empty());
  CHECK(testing::Mismatch(ReadAll(Store(data, dropped)), data) == "");
}

TEST_CASE("Encoder frames a large file with a per-frame codec", "[codec]") {
  constexpr uint32_t kFrame = 4096;
  const std::vector<char> data = MixedFrames(10 * kFrame + kFrame / 2, kFrame, 6);
  EncodedPayload enc = Encode(data, Frames(kFrame));
  REQUIRE(enc.codec == Codec::kFramed);
  CHECK(enc.bytes.size() < data.size());
  FrameTableHeader th;
  std::memcpy(&th, enc.bytes.data(), sizeof th);
  CHECK(th.magic == kFrameTableMagic);
  CHECK(th.frame_size == kFrame);
  REQUIRE(th.frame_count == 11);
  const size_t table_bytes = sizeof th + th.frame_count * sizeof(FrameEntry);
  CHECK(enc.checksum == Checksum(enc.bytes.data(), table_bytes));
  size_t pos = table_bytes;
  for (uint32_t i = 0; i < th.frame_count; ++i) {
    INFO("frame " << i);
    FrameEntry e;
    std::memcpy(&e, enc.bytes.data() + sizeof th + i * sizeof e, sizeof e);
    const size_t raw = std::min<size_t>(kFrame, data.size() - size_t{i} * kFrame);
    REQUIRE(pos + e.stored_size <= enc.bytes.size());
    CHECK(e.checksum == Checksum(enc.bytes.data() + pos, e.stored_size));
    if (i % 2 == 0) {  // text
      REQUIRE(e.codec == static_cast<uint8_t>(Codec::kZstd));
      CHECK(e.stored_size < raw / 2);
      std::vector<char> plain(raw);
      CHECK(ZSTD_decompress(plain.data(), raw, enc.bytes.data() + pos, e.stored_size) == raw);
      CHECK(std::equal(plain.begin(), plain.end(), data.begin() + size_t{i} * kFrame));
    } else {  // random
      REQUIRE(e.codec == static_cast<uint8_t>(Codec::kRaw));
      CHECK(e.stored_size == raw);
      CHECK(std::equal(data.begin() + size_t{i} * kFrame, data.begin() + size_t{i} * kFrame + raw,
                       enc.bytes.begin() + pos));
    }
    pos += e.stored_size;
  }
  CHECK(pos == enc.bytes.size());
  CHECK(testing::Mismatch(ReadAll(Store(data, enc)), data) == "");
}

TEST_CASE("Decoder reads any range of a framed file", "[codec]") {
  constexpr uint32_t kFrame = 4096;
  const std::vector<char> data = MixedFrames(10 * kFrame + kFrame / 2, kFrame, 9);
  EncodedPayload enc = Encode(data, Frames(kFrame));
  REQUIRE(enc.codec == Codec::kFramed);
  const Stored s = Store(data, enc);
  const uint64_t size = data.size();
  PayloadDecoder decoder;
  std::vector<std::pair<uint64_t, size_t>> reads = {{0, size},
                                                    {0, 1},
                                                    {0, kFrame},
                                                    {kFrame - 1, 2},
                                                    {kFrame, kFrame},
                                                    {kFrame - 1, kFrame + 2},
                                                    {3 * kFrame + 17, 4 * kFrame},
                                                    {10 * kFrame, 100},
                                                    {10 * kFrame, kFrame},
                                                    {size - 1, 1},
                                                    {size - 1, 100},
                                                    {size - 10, 1 << 20},
                                                    {100, size},
                                                    {size, 10},
                                                    {size + 5, 10},
                                                    {~uint64_t{0} - 2, 10},
                                                    {0, 0},
                                                    {kFrame, 0},
                                                    {5, 0}};
  std::mt19937_64 rng(20240611);
  for (int i = 0; i < 400; ++i) {
    uint64_t off = rng() % (size + 100);
    if (i % 4 == 0) off = (rng() % 12) * kFrame - (rng() % 2);  // around a boundary
    reads.emplace_back(off, rng() % (3 * kFrame));
  }
  for (const auto& [off, len] : reads) CHECK(CheckRead(&decoder, s, data, off, len) == "");
}

TEST_CASE("Decoder reads any range of raw and zstd files", "[codec]") {
  PayloadDecoder decoder;
  std::mt19937_64 rng(77);
  for (const auto& data : {RandomBytes(3000, 10), TextBytes(3000, 11)}) {
    EncodedPayload enc = Encode(data, EncodeOptions{});
    CHECK(enc.codec == (data == RandomBytes(3000, 10) ? Codec::kRaw : Codec::kZstd));
    const Stored s = Store(data, enc);
    for (auto [off, len] : std::vector<std::pair<uint64_t, size_t>>{
             {0, 3000}, {0, 0}, {0, 5000}, {2999, 9}, {3000, 1}, {4000, 1}, {1, 2998}}) {
      CHECK(CheckRead(&decoder, s, data, off, len) == "");
    }
    for (int i = 0; i < 50; ++i) {
      CHECK(CheckRead(&decoder, s, data, rng() % 3100, rng() % 3100) == "");
    }
  }
}

TEST_CASE("A 0-byte file is raw and reads as empty", "[codec]") {
  const std::vector<char> data;
  EncodedPayload enc = Encode(data, EncodeOptions{});
  CHECK(enc.codec == Codec::kRaw);
  CHECK(enc.bytes.empty());
  CHECK(enc.checksum == Checksum("", 0));
  const Stored s = Store(data, enc);
  CHECK(ReadAll(s).empty());
  PayloadDecoder decoder;
  CHECK(CheckRead(&decoder, s, data, 0, 10) == "");
  CHECK(CheckRead(&decoder, s, data, 0, 0) == "");
}

TEST_CASE("Only files larger than the frame size are framed", "[codec]") {
  constexpr uint32_t kFrame = 4096;
  const std::vector<char> exact = TextBytes(kFrame, 12);
  EncodedPayload one = Encode(exact, Frames(kFrame));
  CHECK(one.codec == Codec::kZstd);
  CHECK(testing::Mismatch(ReadAll(Store(exact, one)), exact) == "");
  CHECK(Encode(RandomBytes(kFrame, 13), Frames(kFrame)).codec == Codec::kRaw);

  const std::vector<char> over = TextBytes(kFrame + 1, 14);
  EncodedPayload two = Encode(over, Frames(kFrame));
  REQUIRE(two.codec == Codec::kFramed);
  FrameTableHeader th;
  std::memcpy(&th, two.bytes.data(), sizeof th);
  CHECK(th.frame_count == 2);
  FrameEntry last;
  std::memcpy(&last, two.bytes.data() + sizeof th + sizeof last, sizeof last);
  CHECK(last.codec == static_cast<uint8_t>(Codec::kRaw));  // 1 byte does not compress
  CHECK(last.stored_size == 1);
  CHECK(testing::Mismatch(ReadAll(Store(over, two)), over) == "");
  PayloadDecoder decoder;
  CHECK(CheckRead(&decoder, Store(over, two), over, kFrame, 5) == "");
}

TEST_CASE("A large incompressible file is framed with raw frames", "[codec]") {
  // Per-frame checksums let a small read verify only what it touches.
  const std::vector<char> data = RandomBytes(5 * 4096 + 10, 15);
  EncodedPayload enc = Encode(data, Frames(4096));
  REQUIRE(enc.codec == Codec::kFramed);
  FrameTableHeader th;
  std::memcpy(&th, enc.bytes.data(), sizeof th);
  CHECK(th.frame_count == 6);
  for (uint32_t i = 0; i < th.frame_count; ++i) {
    FrameEntry e;
    std::memcpy(&e, enc.bytes.data() + sizeof th + i * sizeof e, sizeof e);
    CHECK(e.codec == static_cast<uint8_t>(Codec::kRaw));
  }
  CHECK(enc.bytes.size() == sizeof th + 6 * sizeof(FrameEntry) + data.size());
  PayloadDecoder decoder;
  CHECK(CheckRead(&decoder, Store(data, enc), data, 4095, 4098) == "");
}

TEST_CASE("Decoder rejects a location that does not match the payload", "[codec]") {
  const std::vector<char> data = TextBytes(3000, 16);
  EncodedPayload enc = Encode(data, EncodeOptions{});
  REQUIRE(enc.codec == Codec::kZstd);
  Stored s = Store(data, enc);
  PayloadDecoder decoder;
  std::vector<char> out;
  SECTION("checksum") { s.loc.checksum ^= 1; }
  SECTION("size") { s.loc.size -= 1; }
  SECTION("codec") { s.loc.codec = Codec::kRaw; }
  SECTION("offset") { s.loc.offset -= 1; }
  Status st = decoder.ReadAll(*s.pack, s.loc, &out, "ctx:file.bin");
  CHECK(st.IsCorruption());
  CHECK(st.message().find("ctx:file.bin") != std::string::npos);
}

// A pack that counts its reads; with `fetches`, it answers FetchFrame in one
// call the way a peer's pack does (ReadTableAndFrame, then SplitTableAndFrame).
class CountingFile final : public RandomAccessFile {
 public:
  CountingFile(MemoryFile& inner, bool fetches) : inner_(inner), fetches_(fetches) {}
  Status ReadExact(uint64_t offset, size_t size, void* dst) const override {
    ++reads;
    return inner_.ReadExact(offset, size, dst);
  }
  const std::string& name() const override { return inner_.name(); }
  std::optional<Result<bool>> FetchFrame(uint64_t payload, uint64_t file_byte, char* frame_dst,
                                         size_t frame_len,
                                         std::vector<char>* table) const override {
    if (!fetches_) return std::nullopt;
    ++fetched;
    std::vector<char> answer;
    const MemoryFile& f = inner_;
    Status st = ReadTableAndFrame(
        [&f](uint64_t off, size_t n, void* dst) { return f.ReadExact(off, n, dst); },
        inner_.bytes().size(), payload, file_byte, 1u << 30, &answer);
    if (!st.ok()) return Result<bool>(st);
    answer[sizeof(FrameTableHeader) + 8] ^= corrupt_table ? 1 : 0;  // the first entry's checksum
    return SplitTableAndFrame(answer.data(), answer.size(), frame_dst, frame_len, table);
  }
  mutable int reads = 0, fetched = 0;
  bool corrupt_table = false;

 private:
  MemoryFile& inner_;
  const bool fetches_;
};

TEST_CASE("Decoder keeps a verified frame table and reads a frame with one read", "[codec]") {
  constexpr uint32_t kFrame = 4096;
  const std::vector<char> data = MixedFrames(6 * kFrame + 100, kFrame, 11);
  EncodedPayload enc = Encode(data, Frames(kFrame));
  REQUIRE(enc.codec == Codec::kFramed);
  const Stored s = Store(data, enc);
  PayloadDecoder decoder;
  std::vector<char> dst(data.size());
  const auto frame = [&](uint64_t i) {
    return std::vector<char>(data.begin() + i * kFrame,
                             data.begin() + std::min<uint64_t>(data.size(), (i + 1) * kFrame));
  };
  SECTION("a local pack: the table is read once, then one read per frame") {
    CountingFile pack(*s.pack, /*fetches=*/false);
    std::shared_ptr<const FrameTable> table;
    REQUIRE(decoder.Read(pack, s.loc, 2 * kFrame, kFrame, dst.data(), "f", &table).ok());
    CHECK(pack.reads == 3);  // header, table, frame
    REQUIRE(table != nullptr);
    CHECK(table->entries.size() == 7);
    for (uint64_t i = 0; i < 7; ++i) {
      pack.reads = 0;
      auto n = decoder.Read(pack, s.loc, i * kFrame, kFrame, dst.data(), "f", &table);
      REQUIRE(n.ok());
      CHECK(pack.reads == 1);
      CHECK(testing::Mismatch(std::vector<char>(dst.begin(), dst.begin() + *n), frame(i)) == "");
    }
  }
  SECTION("a peer's pack: the table comes with the first frame, in one fetch") {
    CountingFile pack(*s.pack, /*fetches=*/true);
    for (uint64_t i = 0; i < 7; ++i) {  // each frame first: in place when raw, else decoded
      std::shared_ptr<const FrameTable> table;
      auto n = decoder.Read(pack, s.loc, i * kFrame, kFrame, dst.data(), "f", &table);
      REQUIRE(n.ok());
      CHECK(testing::Mismatch(std::vector<char>(dst.begin(), dst.begin() + *n), frame(i)) == "");
      CHECK(table != nullptr);
    }
    CHECK(pack.fetched == 7);
    CHECK(pack.reads == 0);
    // Partial reads and reads across frames, each with a table still to fetch.
    std::mt19937_64 rng(5);
    for (int i = 0; i < 200; ++i) {
      const uint64_t off = rng() % data.size();
      const size_t len = 1 + rng() % (3 * kFrame);
      std::vector<char> got(len);
      std::shared_ptr<const FrameTable> table;
      auto n = decoder.Read(pack, s.loc, off, len, got.data(), "f", &table);
      REQUIRE(n.ok());
      CHECK(std::equal(got.begin(), got.begin() + *n, data.begin() + off));
    }
  }
  SECTION("a table that fails its checksum is Corruption and is not kept") {
    CountingFile pack(*s.pack, /*fetches=*/true);
    pack.corrupt_table = true;
    std::shared_ptr<const FrameTable> table;
    auto n = decoder.Read(pack, s.loc, 0, kFrame, dst.data(), "f", &table);
    CHECK(n.status().IsCorruption());
    CHECK(table == nullptr);
  }
}

TEST_CASE("A frame read is served within its bounds only", "[codec]") {
  constexpr uint32_t kFrame = 4096;
  const std::vector<char> data = MixedFrames(3 * kFrame, kFrame, 12);
  EncodedPayload enc = Encode(data, Frames(kFrame));
  const Stored s = Store(data, enc);
  const MemoryFile& f = *s.pack;
  const auto read = [&f](uint64_t off, size_t n, void* dst) { return f.ReadExact(off, n, dst); };
  const uint64_t size = s.pack->bytes().size();
  std::vector<char> out;
  REQUIRE(ReadTableAndFrame(read, size, 32, 2 * kFrame, 1u << 20, &out).ok());
  std::vector<char> table;
  std::vector<char> frame(kFrame);
  auto split = SplitTableAndFrame(out.data(), out.size(), frame.data(), frame.size(), &table);
  REQUIRE(split.ok());
  CHECK(ParseFrameTable(table.data(), table.size(), s.loc, "f").ok());
  CHECK(
      ReadTableAndFrame(read, size, 32, 3 * kFrame, 1u << 20, &out).IsCorruption());  // no frame 3
  CHECK(ReadTableAndFrame(read, size, 0, 0, 1u << 20, &out).IsCorruption());          // not a table
  CHECK(ReadTableAndFrame(read, size, size - 8, 0, 1u << 20, &out).code() ==
        Code::kInvalidArgument);  // past the pack
  CHECK(ReadTableAndFrame(read, size, 32, 0, 100, &out).code() == Code::kInvalidArgument);
  // An answer shorter than the table it starts with.
  CHECK(SplitTableAndFrame(out.data(), 20, frame.data(), frame.size(), &table)
            .status()
            .IsCorruption());
  CHECK(SplitTableAndFrame(out.data(), 3, frame.data(), frame.size(), &table)
            .status()
            .IsCorruption());
}

}  // namespace
}  // namespace clairfs::format
