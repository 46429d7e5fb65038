// Shared helpers for the format unit tests: deterministic test bytes, an
// in-memory packed dataset built with the real ManifestBuilder and
// PayloadEncoder, byte-level editing of serialized manifests, and a temporary
// directory that removes itself. Single-thread; each test builds its own.
#pragma once

#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "base/status.hpp"
#include "partitioner/format/codec.hpp"
#include "partitioner/format/layout.hpp"
#include "partitioner/format/manifest.hpp"

namespace clairfs::format::testing {

// Incompressible bytes, the same for the same seed.
std::vector<char> RandomBytes(size_t n, uint32_t seed);
// Word-like text that zstd shrinks severalfold, the same for the same seed.
std::vector<char> TextBytes(size_t n, uint32_t seed);
// Alternating `frame`-sized runs of text (even runs) and random bytes (odd runs).
std::vector<char> MixedFrames(size_t n, size_t frame, uint32_t seed);

// "" when equal, else the sizes and the first differing byte; keeps Catch from
// printing megabytes of vector contents when a comparison fails.
std::string Mismatch(const std::vector<char>& got, const std::vector<char>& want);

inline constexpr int64_t kBaseMtimeNs = 1'700'000'000'123'456'789;

// One file of the dataset; directories are implied by the paths.
struct FileSpec {
  std::string path;  // relative, '/'-separated
  std::vector<char> data;
  uint32_t partition = 0;  // partition_count means broadcast
  uint32_t mode = 0100644;
  int64_t mtime_ns = kBaseMtimeNs;
};

struct DatasetSpec {
  std::vector<FileSpec> files;
  std::vector<std::string> empty_dirs;  // directories with no files under them
  uint32_t partition_count = 1;
  uint64_t dataset_id = 0x0123456789abcdefULL;
  EncodeOptions encode;
};

// A packed dataset held in memory.
struct Dataset {
  ManifestHeader header{};                            // as set on the builder
  std::vector<char> manifest;                         // serialized manifest bytes
  std::vector<std::vector<char>> packs;               // P + 1 pack files (the last is broadcast)
  std::map<std::string, std::vector<char>> contents;  // file path -> original bytes
  std::map<std::string, Codec> codecs;                // file path -> codec chosen
};

// Builds nodes in breadth-first order with children sorted bytewise, encodes
// every file into its pack, and serializes the manifest.
Result<Dataset> BuildDataset(const DatasetSpec& spec);

// A mixed dataset (raw, zstd, framed with raw and zstd frames, a 0-byte file,
// a broadcast file, a second partition) small enough to flip every byte of.
DatasetSpec SmallMixedSpec();

// Writes dataset.manifest and the packs into `dir` as real files.
void WriteDataset(const Dataset& dataset, const std::string& dir);

// Manifest byte editing. Offsets follow layout.hpp; Reseal recomputes the
// body and then the header checksum so a structural check is what rejects.
size_t NodeOffset(const std::vector<char>& manifest, uint32_t i);
size_t StringsOffset(const std::vector<char>& manifest);
void Reseal(std::vector<char>* manifest);

template <typename T, typename F>
void EditAt(std::vector<char>* bytes, size_t offset, F edit) {
  T value;
  std::memcpy(&value, bytes->data() + offset, sizeof value);
  edit(value);
  std::memcpy(bytes->data() + offset, &value, sizeof value);
}
template <typename F>
void EditHeader(std::vector<char>* manifest, F edit) {
  EditAt<ManifestHeader>(manifest, 0, edit);
}
template <typename F>
void EditNode(std::vector<char>* manifest, uint32_t i, F edit) {
  EditAt<NodeRecord>(manifest, NodeOffset(*manifest, i), edit);
}

// A fresh directory under $TMPDIR (or /tmp), removed with everything in it.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace clairfs::format::testing
