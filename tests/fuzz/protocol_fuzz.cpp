// Fuzz target: the decoders of what ranks send each other - request, reply
// and notice batches (fs/net/protocol.hpp), the start-up manifest envelope
// (fs/dist/manifest_envelope.hpp) - and both ends of a frame read: the owner
// serving a peer's (partition, payload offset, file byte) from its pack, the
// reader splitting the answer (format::ReadTableAndFrame, SplitTableAndFrame).
//
// Input: one selector byte (fuzz::ProtocolMessage), then the message.
// Invariants of a message that decodes:
//  - a request batch encodes back to exactly the bytes received (its decoder
//    accepts one encoding only), and none of its frame reads has a length
//    (a read of a writable area's file, partition kAreaPartition, has one);
//  - a reply batch encodes back to the bytes received, except that payload
//    bytes after an error code are dropped; decoding that again gives the
//    same ids, codes and payloads;
//  - a notice batch holds at most kMaxBatch notices of 1 to kMaxNoticeBytes
//    bytes, each inside the message, and encodes back to exactly the bytes
//    received;
//  - an envelope that yields a manifest yields exactly the bytes after its
//    first byte, and encodes back to itself;
//  - a served frame read stays within the pack and its limit, starts with the
//    pack's bytes at the payload, and splits back into exactly those bytes;
//    any answer either splits into its own bytes or is refused.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "fs/dist/manifest_envelope.hpp"
#include "fs/net/protocol.hpp"
#include "partitioner/format/codec.hpp"
#include "tests/fuzz/fuzz_inputs.hpp"

namespace {

using namespace clairfs::fs;
using clairfs::fuzz::ProtocolMessage;

void Require(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "protocol_fuzz: invariant violated: %s\n", what);
  std::abort();
}

void CheckRequests(const std::vector<char>& msg) {
  auto reqs = wire::DecodeRequests(msg.data(), msg.size());
  if (!reqs.ok()) return;
  Require(reqs->size() <= wire::kMaxBatch, "a request batch over the batch limit decodes");
  for (const wire::Request& r : *reqs) {
    Require(r.read.frame_at == kNoFrame || r.read.length == 0 || r.read.partition == kAreaPartition,
            "a frame read with a length decodes");
  }
  Require(wire::EncodeRequests(*reqs) == msg, "a request batch does not encode back to itself");
}

void CheckReplies(const std::vector<char>& msg) {
  auto replies = wire::DecodeReplies(msg.data(), msg.size());
  if (!replies.ok()) return;
  Require(replies->size() <= wire::kMaxBatch, "a reply batch over the batch limit decodes");
  bool error_data = false;
  std::vector<wire::Reply> owned;
  for (const wire::ReplyView& r : *replies) {
    error_data |= r.err != 0 && !r.data.empty();
    Require(r.data.empty() || (r.data.data() >= msg.data() &&
                               r.data.data() + r.data.size() <= msg.data() + msg.size()),
            "a reply's payload lies outside its message");
    owned.push_back({r.id, r.err, std::vector<char>(r.data.begin(), r.data.end())});
  }
  const std::vector<char> encoded = wire::EncodeReplies(owned);
  if (!error_data) Require(encoded == msg, "a reply batch does not encode back to itself");
  auto again = wire::DecodeReplies(encoded.data(), encoded.size());
  Require(again.ok() && again->size() == replies->size(), "a re-encoded reply batch fails");
  for (size_t i = 0; i < replies->size(); ++i) {
    const wire::ReplyView &a = (*replies)[i], &b = (*again)[i];
    Require(a.id == b.id && a.err == b.err, "a re-encoded reply has another id or code");
    Require(a.err != 0 ? b.data.empty() : std::ranges::equal(a.data, b.data),
            "a re-encoded reply's payload differs");
  }
}

void CheckNotices(const std::vector<char>& msg) {
  auto notices = wire::DecodeNotices(msg.data(), msg.size());
  if (!notices.ok()) return;
  Require(notices->size() <= wire::kMaxBatch, "a notice batch over the batch limit decodes");
  std::vector<std::vector<char>> owned;
  for (std::span<const char> n : *notices) {
    Require(!n.empty() && n.size() <= kMaxNoticeBytes, "a notice of a refused size decodes");
    Require(n.data() >= msg.data() && n.data() + n.size() <= msg.data() + msg.size(),
            "a notice lies outside its message");
    owned.emplace_back(n.begin(), n.end());
  }
  Require(wire::EncodeNotices(owned) == msg, "a notice batch does not encode back to itself");
}

void CheckEnvelope(const std::vector<char>& msg) {
  auto manifest = DecodeManifestEnvelope(msg);
  Require(manifest.ok() == (!msg.empty() && msg[0] == 1), "an envelope's kind is misread");
  if (!manifest.ok()) return;
  Require(std::equal(manifest->begin(), manifest->end(), msg.begin() + 1, msg.end()),
          "an envelope's manifest bytes differ");
  Require(EncodeManifestEnvelope(*manifest) == msg, "an envelope does not encode back to itself");
}

// Splits `answer` and checks that nothing was lost or invented.
void CheckSplit(const std::vector<char>& answer, uint32_t frame_len, bool must_split) {
  std::vector<char> table, frame(std::min<uint32_t>(frame_len, 1u << 20));
  auto split = clairfs::format::SplitTableAndFrame(answer.data(), answer.size(), frame.data(),
                                                   frame.size(), &table);
  Require(split.ok() || !must_split, "a served frame read does not split");
  if (!split.ok()) return;
  Require(table.size() <= answer.size(), "a split table is longer than its answer");
  Require(std::equal(table.begin(), table.end(), answer.begin()), "a split table differs");
  if (*split) {
    Require(table.size() + frame.size() == answer.size(), "a split loses bytes");
    Require(std::equal(frame.begin(), frame.end(), answer.begin() + table.size()),
            "a split frame differs");
  } else {
    Require(table.size() == answer.size(), "a split loses bytes");
  }
}

void CheckFrameRead(const std::vector<char>& msg) {
  clairfs::fuzz::FrameReadInput in;
  if (msg.size() < sizeof in) return;
  std::memcpy(&in, msg.data(), sizeof in);
  const std::vector<char> pack(msg.begin() + sizeof in, msg.end());
  const auto read = [&pack](uint64_t off, size_t n, void* dst) {
    Require(off <= pack.size() && n <= pack.size() - off, "a frame read reads past the pack");
    if (n > 0) std::memcpy(dst, pack.data() + off, n);
    return clairfs::Status::Ok();
  };
  std::vector<char> answer;
  const clairfs::Status st = clairfs::format::ReadTableAndFrame(read, pack.size(), in.payload,
                                                                in.file_byte, in.limit, &answer);
  if (st.ok()) {
    Require(answer.size() <= in.limit, "a served frame read exceeds its limit");
    Require(std::equal(answer.begin(), answer.begin() + std::min<size_t>(answer.size(), 16),
                       pack.begin() + in.payload),
            "a served frame read does not start with its table");
  }
  CheckSplit(st.ok() ? answer : pack, in.frame_len, st.ok());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::vector<char> msg(data + 1, data + size);
  switch (static_cast<ProtocolMessage>(data[0] % clairfs::fuzz::kProtocolMessages)) {
    case ProtocolMessage::kRequests:
      CheckRequests(msg);
      break;
    case ProtocolMessage::kReplies:
      CheckReplies(msg);
      break;
    case ProtocolMessage::kManifestEnvelope:
      CheckEnvelope(msg);
      break;
    case ProtocolMessage::kFrameRead:
      CheckFrameRead(msg);
      break;
    case ProtocolMessage::kNotices:
      CheckNotices(msg);
      break;
  }
  return 0;
}
