// The on-disk layout of a packed dataset, version 1. docs/format.md is the
// prose specification; this header is its exact byte layout. All integers are
// little-endian, all structures are packed to the sizes asserted below.
//
//   OUT/manifest      header, partition table, node table, string pool
//   OUT/part-NNNNN    pack header, then file payloads back to back
//   OUT/part-bcast    the same, for files every node stores (--broadcast)
#pragma once

#include <bit>
#include <cstdint>

namespace clairfs::format {

static_assert(std::endian::native == std::endian::little, "the format is little-endian");

inline constexpr char kManifestMagic[8] = {'C', 'L', 'F', 'S', 'M', 'A', 'N', '1'};
inline constexpr char kPackMagic[8] = {'C', 'L', 'F', 'S', 'P', 'A', 'K', '1'};
inline constexpr uint32_t kFrameTableMagic = 0x4d524646;  // "FFRM"
inline constexpr uint32_t kFormatVersion = 1;
inline constexpr uint32_t kDefaultFrameSize = 1u << 20;
inline constexpr const char* kManifestName = "manifest";
inline constexpr const char* kBroadcastPackName = "part-bcast";

// How a node's payload is stored.
enum class Codec : uint8_t {
  kRaw = 0,     // payload == file bytes
  kZstd = 1,    // payload == one zstd frame of the whole file
  kFramed = 2,  // payload == FrameTableHeader, FrameEntry[n], frames
};

enum class NodeKind : uint8_t { kDirectory = 1, kFile = 2 };

inline constexpr uint8_t kNodeFlagBroadcast = 1;

struct ManifestHeader {
  char magic[8];
  uint32_t version;
  uint32_t header_size;  // sizeof(ManifestHeader)
  uint64_t dataset_id;   // random per pack run; every pack header repeats it
  uint32_t node_count;   // directories + files; node 0 is the root directory
  uint32_t file_count;
  uint32_t partition_count;  // P; the partition table has P + 1 rows (the last is broadcast)
  uint32_t replicas;         // K copies of each partition requested for the daemons
  uint32_t frame_size;       // files larger than this are kFramed
  uint32_t zstd_level;       // 0 when compression was off
  uint64_t string_bytes;     // size of the string pool
  uint64_t raw_bytes;        // sum of file sizes
  uint64_t stored_bytes;     // sum of payload sizes
  int64_t created_unix;      // seconds
  uint64_t body_checksum;    // XXH3-64 of everything after the header
  uint64_t reserved[4];
  uint64_t header_checksum;  // XXH3-64 of the header bytes before this field
};
static_assert(sizeof(ManifestHeader) == 128);

struct PartitionRecord {
  uint64_t pack_bytes;     // size of the pack file including its header
  uint64_t pack_checksum;  // XXH3-64 of the whole pack file
  uint32_t file_count;
  uint32_t reserved;
  uint64_t raw_bytes;  // sum of the sizes of the files it holds
};
static_assert(sizeof(PartitionRecord) == 32);

// One directory or file. Nodes are in breadth-first order: the children of a
// directory are contiguous and sorted by name (bytewise), so lookup is a binary
// search and readdir a slice. The inode number of node i is i + 1.
struct NodeRecord {
  uint64_t size;         // file: bytes; directory: 0
  uint64_t offset;       // file: payload offset in its pack; directory: first child index
  uint64_t stored_size;  // file: payload bytes in the pack; directory: child count
  uint64_t checksum;     // file: XXH3-64 of the payload (kFramed: of the frame table)
  int64_t mtime_ns;
  uint32_t parent;       // node index; the root is its own parent
  uint32_t name_offset;  // into the string pool; the root's name is empty
  uint32_t partition;    // file: partition index, or partition_count for broadcast
  uint32_t mode;         // st_mode including the type bits
  uint16_t name_length;
  uint8_t kind;   // NodeKind
  uint8_t codec;  // Codec (files)
  uint8_t flags;  // kNodeFlag*
  uint8_t reserved[3];
};
static_assert(sizeof(NodeRecord) == 64);

struct PackHeader {
  char magic[8];
  uint32_t version;
  uint32_t partition;  // index, or partition_count for the broadcast pack
  uint64_t dataset_id;
  uint64_t reserved;
};
static_assert(sizeof(PackHeader) == 32);

// The start of a kFramed payload. Frame i covers file bytes
// [i * frame_size, min(size, (i + 1) * frame_size)).
struct FrameTableHeader {
  uint32_t magic;  // kFrameTableMagic
  uint32_t frame_size;
  uint32_t frame_count;
  uint32_t reserved;
};
static_assert(sizeof(FrameTableHeader) == 16);

struct FrameEntry {
  uint32_t stored_size;  // bytes of this frame in the pack
  uint8_t codec;         // kRaw or kZstd, chosen per frame
  uint8_t reserved[3];
  uint64_t checksum;  // XXH3-64 of the stored frame
};
static_assert(sizeof(FrameEntry) == 16);

}  // namespace clairfs::format
