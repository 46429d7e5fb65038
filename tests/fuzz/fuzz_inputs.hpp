// Input layouts shared by the fuzz targets and the seed writer (fuzz_seeds),
// and the resealing that lets a mutated input get past a checksum to the
// checks behind it. Header-only; thread-compatible.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "partitioner/format/checksum.hpp"
#include "partitioner/format/layout.hpp"

namespace clairfs::fuzz {

// payload_fuzz: PayloadInput, then the payload as stored in the pack.
struct PayloadInput {
  uint64_t checksum;     // NodeRecord::checksum (ignored with kResealPayload)
  uint32_t size;         // NodeRecord::size: the file's bytes
  uint32_t read_offset;  // a partial read, checked against the whole file
  uint32_t read_length;
  uint8_t codec;  // NodeRecord::codec
  uint8_t flags;  // kReseal*
  uint16_t reserved;
};
static_assert(sizeof(PayloadInput) == 24);

inline constexpr uint8_t kResealPayload = 1;  // the node's checksum is computed, not given
inline constexpr uint8_t kResealFrames = 2;   // so is every frame entry's

// protocol_fuzz: one selector byte (ProtocolMessage, modulo its count), then the message.
enum class ProtocolMessage : uint8_t {
  kRequests = 0,
  kReplies = 1,
  kManifestEnvelope = 2,
  kFrameRead = 3,  // FrameReadInput, then the bytes of a pack
  kNotices = 4,
};
inline constexpr uint8_t kProtocolMessages = 5;

// A frame read (fs::PackRead with frame_at) served from the pack bytes that
// follow, and the reader's split of the answer.
struct FrameReadInput {
  uint64_t payload;    // PackRead::offset: where the framed payload starts
  uint64_t file_byte;  // PackRead::frame_at
  uint32_t limit;      // the most bytes the answer may hold
  uint32_t frame_len;  // the reader's destination for the frame
};
static_assert(sizeof(FrameReadInput) == 24);

// Recomputes a serialized manifest's body and header checksums.
inline void ResealManifest(std::vector<char>* bytes) {
  format::ManifestHeader h;
  if (bytes->size() < sizeof h) return;
  std::memcpy(&h, bytes->data(), sizeof h);
  h.body_checksum = format::Checksum(bytes->data() + sizeof h, bytes->size() - sizeof h);
  h.header_checksum = format::Checksum(&h, offsetof(format::ManifestHeader, header_checksum));
  std::memcpy(bytes->data(), &h, sizeof h);
}

}  // namespace clairfs::fuzz
