// Fuzz target: the decoders of what ranks send each other - request and
// reply batches (fs/net/protocol.hpp) and the start-up manifest envelope
// (fs/dist/manifest_envelope.hpp).
//
// Input: one selector byte (fuzz::ProtocolMessage), then the message.
// Invariants of a message that decodes:
//  - a request batch encodes back to exactly the bytes received (its decoder
//    accepts one encoding only);
//  - a reply batch encodes back to the bytes received, except that payload
//    bytes after an error code are dropped; decoding that again gives the
//    same ids, codes and payloads;
//  - an envelope that yields a manifest yields exactly the bytes after its
//    first byte, and encodes back to itself.
#include <cstdio>
#include <cstdlib>

#include "fs/dist/manifest_envelope.hpp"
#include "fs/net/protocol.hpp"
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
  Require(wire::EncodeRequests(*reqs) == msg, "a request batch does not encode back to itself");
}

void CheckReplies(const std::vector<char>& msg) {
  auto replies = wire::DecodeReplies(msg.data(), msg.size());
  if (!replies.ok()) return;
  Require(replies->size() <= wire::kMaxBatch, "a reply batch over the batch limit decodes");
  bool error_data = false;
  for (const wire::Reply& r : *replies) error_data |= r.err != 0 && !r.data.empty();
  const std::vector<char> encoded = wire::EncodeReplies(*replies);
  if (!error_data) Require(encoded == msg, "a reply batch does not encode back to itself");
  auto again = wire::DecodeReplies(encoded.data(), encoded.size());
  Require(again.ok() && again->size() == replies->size(), "a re-encoded reply batch fails");
  for (size_t i = 0; i < replies->size(); ++i) {
    const wire::Reply &a = (*replies)[i], &b = (*again)[i];
    Require(a.id == b.id && a.err == b.err, "a re-encoded reply has another id or code");
    Require(a.err != 0 ? b.data.empty() : a.data == b.data, "a re-encoded reply's payload differs");
  }
}

void CheckEnvelope(const std::vector<char>& msg) {
  auto manifest = DecodeManifestEnvelope(msg);
  Require(manifest.ok() == (!msg.empty() && msg[0] == 1), "an envelope's kind is misread");
  if (!manifest.ok()) return;
  Require(std::equal(manifest->begin(), manifest->end(), msg.begin() + 1, msg.end()),
          "an envelope's manifest bytes differ");
  Require(EncodeManifestEnvelope(*manifest) == msg, "an envelope does not encode back to itself");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::vector<char> msg(data + 1, data + size);
  switch (static_cast<ProtocolMessage>(data[0] % clairfs::fuzz::kProtocolMessages)) {
    case ProtocolMessage::kRequests: CheckRequests(msg); break;
    case ProtocolMessage::kReplies: CheckReplies(msg); break;
    case ProtocolMessage::kManifestEnvelope: CheckEnvelope(msg); break;
  }
  return 0;
}
