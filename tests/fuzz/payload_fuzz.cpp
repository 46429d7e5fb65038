// Fuzz target: PayloadDecoder (partitioner/format/codec.hpp), which turns a
// file's payload as stored in its pack (raw, one zstd frame, or a frame table
// and frames) into the file's bytes, verifying every checksum.
//
// Input: fuzz::PayloadInput (the file's size, codec and checksum, a partial
// read), then the stored payload, placed in a pack after a pack header. With
// the kReseal* flags the target computes the checksums itself, so mutations
// reach the frame table, the frame bounds and zstd behind them. Invariants:
//  - a whole read that verifies has exactly the declared size;
//  - a partial read of a file whose whole read verified returns the same
//    bytes as that slice of it (and a raw or zstd payload fails a partial
//    read exactly when it fails a whole one);
//  - the decoded bytes, encoded again with PayloadEncoder, decode to
//    themselves.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "partitioner/format/codec.hpp"
#include "partitioner/format/file_io.hpp"
#include "tests/fuzz/fuzz_inputs.hpp"

namespace {

using namespace clairfs::format;
using clairfs::Status;
using clairfs::fuzz::PayloadInput;

// Larger declared sizes are skipped: the decoder allocates the file's size.
constexpr uint32_t kMaxFileBytes = 1u << 20;

void Require(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "payload_fuzz: invariant violated: %s\n", what);
  std::abort();
}

// The offset of the table's end in a framed payload, clipped to the payload.
size_t TableEnd(const std::vector<char>& payload) {
  FrameTableHeader th;
  if (payload.size() < sizeof th) return payload.size();
  std::memcpy(&th, payload.data(), sizeof th);
  const uint64_t table = sizeof th + uint64_t{th.frame_count} * sizeof(FrameEntry);
  return static_cast<size_t>(std::min<uint64_t>(payload.size(), table));
}

void ResealFrames(std::vector<char>* payload) {
  const size_t end = TableEnd(*payload);
  uint64_t pos = end;
  for (size_t at = sizeof(FrameTableHeader); at + sizeof(FrameEntry) <= end;
       at += sizeof(FrameEntry)) {
    FrameEntry e;
    std::memcpy(&e, payload->data() + at, sizeof e);
    if (pos + e.stored_size > payload->size()) break;
    e.checksum = Checksum(payload->data() + pos, e.stored_size);
    std::memcpy(payload->data() + at, &e, sizeof e);
    pos += e.stored_size;
  }
}

uint64_t PayloadChecksum(const std::vector<char>& payload, Codec codec) {
  const size_t n = codec == Codec::kFramed ? TableEnd(payload) : payload.size();
  return Checksum(payload.data(), n);
}

// A pack holding `payload` after a zeroed pack header, and where it is.
MemoryFile MakePack(const std::vector<char>& payload, PayloadLocation* loc) {
  std::vector<char> pack(sizeof(PackHeader), 0);
  pack.insert(pack.end(), payload.begin(), payload.end());
  loc->offset = sizeof(PackHeader);
  loc->stored_size = payload.size();
  return MemoryFile("fuzz-pack", std::move(pack));
}

void CheckReencoded(const std::vector<char>& file) {
  PayloadEncoder encoder(EncodeOptions{.zstd_level = 1, .frame_size = 4096, .min_saving = 0.05});
  EncodedPayload enc;
  Require(encoder.Encode(file.data(), file.size(), &enc).ok(), "encoding failed");
  PayloadLocation loc{file.size(), 0, 0, enc.checksum, enc.codec};
  MemoryFile pack = MakePack(enc.codec == Codec::kRaw ? file : enc.bytes, &loc);
  PayloadDecoder decoder;
  std::vector<char> back;
  Require(decoder.ReadAll(pack, loc, &back, "re-encoded").ok(), "re-encoded payload fails");
  Require(back == file, "re-encoded payload decodes to other bytes");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  PayloadInput in;
  if (size < sizeof in) return 0;
  std::memcpy(&in, data, sizeof in);
  if (in.size > kMaxFileBytes) return 0;
  std::vector<char> payload(data + sizeof in, data + size);
  const auto codec = static_cast<Codec>(in.codec);
  if (in.flags & clairfs::fuzz::kResealFrames) ResealFrames(&payload);
  const uint64_t checksum =
      (in.flags & clairfs::fuzz::kResealPayload) ? PayloadChecksum(payload, codec) : in.checksum;
  PayloadLocation loc{in.size, 0, 0, checksum, codec};
  MemoryFile pack = MakePack(payload, &loc);

  PayloadDecoder decoder;
  std::vector<char> whole;
  const Status whole_st = decoder.ReadAll(pack, loc, &whole, "fuzz");
  if (whole_st.ok()) Require(whole.size() == in.size, "a verified payload has another size");

  const size_t length = std::min(in.read_length, in.size);
  std::vector<char> part(length);
  auto n = decoder.Read(pack, loc, in.read_offset, length, part.data(), "fuzz");
  const bool touches = in.read_offset < in.size && length > 0;
  if (codec != Codec::kFramed && touches) {
    Require(n.ok() == whole_st.ok(), "partial and whole reads disagree on validity");
  }
  if (whole_st.ok()) {
    Require(n.ok(), "a partial read fails where the whole read verified");
    const size_t from = touches ? in.read_offset : 0;
    const size_t want = touches ? std::min<size_t>(length, in.size - from) : 0;
    Require(*n == want, "a partial read returns the wrong count");
    Require(std::equal(part.begin(), part.begin() + want, whole.begin() + from),
            "a partial read differs from the whole file");
    CheckReencoded(whole);
  }
  return 0;
}
